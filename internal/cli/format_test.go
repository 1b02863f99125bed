package cli

import "github.com/ragcanary/ragcanary/internal/dev/testutil/objects"

// bounds builds an ExclusionBounds for the plugin's tests; a negative
// duration leaves that bound unknown. The formatting itself is tested in
// internal/format.
var bounds = objects.Bounds
