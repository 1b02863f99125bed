// Package scoring is the evaluation engine shared by the offline `ragcanary
// eval` command and the SuiteRun controller. It is pure logic: callers hand it
// cases (the expected evidence sets) and results (what a RAG system returned)
// and get back a Report with per-case scores, per-persona summaries and gate
// verdicts.
//
// Conventions that the rest of the package relies on:
//
//   - A metric whose denominator is zero is undefined and reported as null
//     (a nil *float64), never as 0 or 1, so an empty persona or a case without
//     relevant evidence cannot look perfect or broken.
//   - Only the first K entries of retrieved_ids are scored for recall, fill
//     and reciprocal rank, but forbidden IDs are searched for at every rank:
//     a leak below the cutoff is still a leak.
//   - A repeated retrieved ID still occupies its slot in the top-K window (the
//     system wasted it) but never earns credit twice, and ranks are counted
//     over distinct IDs so a duplicate does not push a later hit down.
//   - Invalid input is an error (*ValidationError), never a skip: a truncated
//     export must not be able to improve a score.
package scoring
