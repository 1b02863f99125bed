package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalObjectReference names another object in the same namespace. It is a
// plain name on purpose: ragcanary never follows a reference into another
// namespace unless the operator is configured to.
type LocalObjectReference struct {
	// name of the referenced object, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// SecretKeyReference selects one key of a Secret in the same namespace.
type SecretKeyReference struct {
	// name of the Secret, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key within the Secret's data that holds the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// Schedule says when runs are created. Exactly one of cron or every is set.
// +kubebuilder:validation:XValidation:rule="has(self.cron) != has(self.every)",message="set exactly one of cron or every"
type Schedule struct {
	// cron is a five-field cron expression (minute hour day-of-month month
	// day-of-week) or a descriptor such as "@hourly", evaluated in UTC.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Cron string `json:"cron,omitempty"`

	// every is a fixed interval between runs, for example "15m".
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="every must be a duration of at least 1s"
	Every *metav1.Duration `json:"every,omitempty"`
}

// ConcurrencyPolicy says what happens when a run is due while another is active.
// +kubebuilder:validation:Enum=Forbid;Allow;Replace
type ConcurrencyPolicy string

const (
	// ForbidConcurrent skips a due run while another run is active.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// AllowConcurrent lets runs overlap, up to a cap of active runs.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ReplaceConcurrent deletes the active run and starts the new one.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// Scheduling holds the CronJob-like settings shared by the scheduling kinds.
type Scheduling struct {
	// schedule says when runs are created.
	// +required
	Schedule Schedule `json:"schedule"`

	// suspend stops new runs from being created; active runs continue.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// concurrencyPolicy says what to do when a run is due while one is active.
	// Forbid (the default) never overlaps runs. Allow lets at most 5
	// unfinished runs of one canary overlap: at that cap a due run waits as
	// under Forbid, and Ready shows reason TooManyActiveRuns.
	// +optional
	// +kubebuilder:default=Forbid
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// jitter delays each scheduled run by a random amount up to this duration,
	// so many schedules do not probe a target at the same instant.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="jitter must not be negative"
	Jitter *metav1.Duration `json:"jitter,omitempty"`

	// successfulRunsHistoryLimit is how many finished successful runs to keep.
	// Unset uses the operator's default (3 unless configured).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// failedRunsHistoryLimit is how many finished unsuccessful runs to keep.
	// Unset uses the operator's default (3 unless configured).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`
}
