// The manager serves /metrics only to callers the API server vouches for:
// it sends each bearer token to a TokenReview and each request to a
// SubjectAccessReview (controller-runtime's metrics filter), so it may
// create both.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

package shared
