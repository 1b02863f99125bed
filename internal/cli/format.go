// Package cli is the logic behind the kubectl-ragcanary plugin: what each
// command reads from the cluster and how it is shown to a person. Durations
// and intervals are formatted by internal/format, the same leaf the
// controllers write their short status fields with, so kubectl get and the
// plugin agree.
package cli

import (
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/format"
)

// rounding and its values keep the plugin's own names for format.Rounding.
type rounding = format.Rounding

const (
	roundNearest = format.Nearest
	roundUp      = format.Up
)

// HumanDuration rounds d for people, as format.HumanDuration does.
func HumanDuration(d time.Duration) string { return format.HumanDuration(d) }

// Interval shows interval-censored bounds, as format.Interval does.
func Interval(b *v1alpha1.ExclusionBounds) string { return format.Interval(b) }

func humanDuration(d time.Duration, r rounding) string { return format.Rounded(d, r) }
