package v1alpha1

// LabelCanary on a CanaryRun names the RevocationCanary whose series its
// measurements belong to, for runs made from a canary's spec without an
// owner reference (kubectl ragcanary run). The controllers set it and the
// metrics read it.
const LabelCanary = "ragcanary.dev/canary"
