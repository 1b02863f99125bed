// Package scoring is the evaluation engine shared by the offline `ragcanary
// eval` command, its live mode and the SuiteRun controller. It is pure
// logic: callers hand it cases (the expected action and evidence sets, in
// the v1 or v2 format) and results (what a RAG system returned and
// declared) and get back a Report with per-case outcomes, per-persona and
// per-stratum summaries and per-persona gate verdicts. A v1 case or result
// is mapped onto the v2 model (CaseV2, ResultV2), so there is one engine.
//
// Conventions that the rest of the package relies on:
//
//   - A metric whose denominator is zero is undefined and reported as null
//     (a nil *float64), never as 0 or 1, so an empty persona or a case without
//     relevant evidence cannot look perfect or broken.
//   - Only the first K entries of retrieved_ids are scored for recall, fill,
//     reciprocal rank, precision and nDCG, but forbidden IDs are searched for
//     at every rank: a leak below the cutoff is still a leak.
//   - A repeated retrieved ID still occupies its slot in the top-K window (the
//     system wasted it) but never earns credit twice, and ranks are counted
//     over distinct IDs so a duplicate does not push a later hit down.
//   - Invalid input is an error (*ValidationError), never a skip: a truncated
//     export must not be able to improve a score.
//   - Work is per case: a Session decodes cases into a compact form, scores
//     each result the moment it is decoded, and writes the report case by
//     case, so memory grows with what is kept per case, not with the files.
//   - Frozen evidence (Evidence) holds everything needed to rescore a run
//     later (Replay) — and never a credential.
package scoring
