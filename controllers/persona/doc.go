// Package persona reconciles Personas: it checks that the credential
// Secret exists, is labelled for ragcanary and holds the key, and reports
// Ready with a reason a person can act on.
package persona
