// Package corpus reconciles Corpora: it resolves a Corpus through the door,
// checks the target's capabilities and the permissions backend, refuses
// surfaces that would carry a persona's credential (credentials.go), and
// reports Ready with a reason a person can act on (controller.go).
package corpus
