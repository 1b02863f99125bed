#!/usr/bin/env python3
"""Plain-Python baseline for `ragcanary eval`, the yardstick of `make bench`.

    python3 baseline.py CASES.json RESULTS.json [--k N]

It implements the checks of the runnable offline harness the product was
designed from -- strict validation, recall@k, MRR@k, forbidden IDs at any
rank, abstention -- the way a script would: json.load of each whole file and
plain loops. It reads v1 files (relevant_ids / allowed_ids / must_abstain,
abstained) and v2 files (expected.action, allowed_evidence,
required_evidence, ...; response, answer_text, latency_ms), element by
element, and prints one JSON summary on stdout.

Exit status: 0 every gate passed, 1 a gate failed, 2 invalid input. The gates
are ragcanary's zero-tolerance ones: no case with a forbidden ID (retrieved at
any rank, cited, or a forbidden marker in the answer text), no citation
outside retrieved and allowed, no required block that was answered.

It is deliberately an honest, ordinary script, not a tuned one: the
benchmark asks how a Go engine compares with what an evaluator would write.
"""

import argparse
import datetime
import json
import re
import sys

ACTIONS = ("answer", "block", "not_found", "not_applicable", "clarify", "conflict")
REASONS = ("NO_EVIDENCE", "OUT_OF_SCOPE", "UNAUTHORIZED", "STALE_ONLY",
           "CONFLICTING_EVIDENCE", "INSUFFICIENT_CONFIDENCE")


class Invalid(Exception):
    """Invalid input: exit 2, naming what to fix."""


def strict_object(pairs):
    # json.load keeps the last of duplicated keys silently; a duplicate in an
    # export is a typo that could change a score, so it is refused.
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise Invalid("duplicate field %r" % key)
        obj[key] = value
    return obj


# Field specs: name -> (type, required). Types: str (non-empty when
# required), bool, ids (list of non-empty strings), idsets (list of ids),
# strs (list of strings), num (a finite number >= 0), obj (a nested spec).
V1_CASE = {"id": ("str", True), "persona": ("str", False), "question": ("str", True),
           "relevant_ids": ("ids", True), "allowed_ids": ("ids", True),
           "must_abstain": ("bool", True)}
V1_RESULT = {"id": ("str", True), "retrieved_ids": ("ids", True),
             "cited_ids": ("ids", True), "abstained": ("bool", True)}
V2_EXPECTED = {"action": ("str", True), "allowed_evidence": ("ids", True),
               "required_evidence": ("ids", False), "required_any_of": ("idsets", False),
               "forbidden_evidence": ("ids", False), "superseded_evidence": ("ids", False),
               "expected_citations": ("ids", False), "internal_reason": ("str", False),
               "public_response_class": ("str", False), "forbidden_markers": ("strs", False)}
V2_CASE = {"id": ("str", True), "question": ("str", True), "persona": ("str", False),
           "stratum": ("str", False), "as_of": ("str", False), "expected": ("obj", True)}
V2_RESULT = {"id": ("str", True), "retrieved_ids": ("ids", True), "cited_ids": ("ids", True),
             "response": ("str", False), "answer_text": ("str", False),
             "latency_ms": ("num", False)}


def check_fields(obj, spec, where):
    if type(obj) is not dict:
        raise Invalid("%s must be a JSON object" % where)
    for key in obj:
        if key not in spec:
            raise Invalid("%s: unknown field %r" % (where, key))
    for key, (kind, required) in spec.items():
        if key not in obj:
            if required:
                raise Invalid("%s: missing required field %r" % (where, key))
            continue
        check_type(obj[key], kind, required, "%s: field %r" % (where, key))


def check_type(value, kind, required, where):
    # type(...) is, not isinstance: True is an int and 1 is not a boolean.
    if kind == "str":
        if type(value) is not str:
            raise Invalid("%s must be a string" % where)
        if required and value == "":
            raise Invalid("%s must not be empty" % where)
    elif kind == "bool":
        if type(value) is not bool:
            raise Invalid("%s must be a boolean" % where)
    elif kind == "ids" or kind == "strs":
        if type(value) is not list:
            raise Invalid("%s must be an array of strings" % where)
        for item in value:
            if type(item) is not str:
                raise Invalid("%s must be an array of strings" % where)
            if kind == "ids" and item == "":
                raise Invalid("%s contains an empty id" % where)
    elif kind == "idsets":
        if type(value) is not list:
            raise Invalid("%s must be an array of arrays of strings" % where)
        for item in value:
            check_type(item, "ids", True, where)
    elif kind == "num":
        if type(value) not in (int, float) or value != value or value < 0 or value == float("inf"):
            raise Invalid("%s must be a finite number >= 0" % where)


def unique(ids, where):
    seen = set(ids)
    if len(seen) != len(ids):
        raise Invalid("%s lists an id more than once" % where)
    return seen


RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def read_case(obj, i):
    """Validates one case and returns it in one shape for both versions:
    (id, persona, action, allowed, required, any_of, superseded, forbidden,
    markers)."""
    where = "case #%d" % (i + 1)
    if type(obj) is dict and type(obj.get("id")) is str:
        where += " (%s)" % obj["id"]
    if type(obj) is dict and "expected" in obj:
        check_fields(obj, V2_CASE, where)
        exp = obj["expected"]
        check_fields(exp, V2_EXPECTED, where + " expected")
        if exp["action"] not in ACTIONS:
            raise Invalid("%s: expected.action %r is not one of %s" % (where, exp["action"], ", ".join(ACTIONS)))
        if "internal_reason" in exp and exp["internal_reason"] not in REASONS:
            raise Invalid("%s: expected.internal_reason %r is not one of %s" % (where, exp["internal_reason"], ", ".join(REASONS)))
        if "as_of" in obj:
            try:
                if not RFC3339.match(obj["as_of"]):
                    raise ValueError
                datetime.datetime.fromisoformat(obj["as_of"].replace("Z", "+00:00"))
            except ValueError:
                raise Invalid("%s: as_of %r is not an RFC 3339 time" % (where, obj["as_of"]))
        sets = {}
        for field in ("allowed_evidence", "required_evidence", "forbidden_evidence",
                      "superseded_evidence", "expected_citations"):
            sets[field] = unique(exp.get(field, []), "%s expected.%s" % (where, field))
        allowed, superseded, forbidden = sets["allowed_evidence"], sets["superseded_evidence"], sets["forbidden_evidence"]
        any_of = exp.get("required_any_of", [])
        for alt in any_of:
            if not alt:
                raise Invalid("%s: expected.required_any_of has an empty set" % where)
            unique(alt, where + " expected.required_any_of")
        for marker in exp.get("forbidden_markers", []):
            if not marker.strip():
                raise Invalid("%s: expected.forbidden_markers has an empty marker" % where)
        for field in ("required_evidence", "expected_citations"):
            for doc in exp.get(field, []):
                if doc not in allowed:
                    raise Invalid("%s: expected.%s id %r is not in allowed_evidence" % (where, field, doc))
        for alt in any_of:
            for doc in alt:
                if doc not in allowed:
                    raise Invalid("%s: expected.required_any_of id %r is not in allowed_evidence" % (where, doc))
        if superseded & allowed:
            raise Invalid("%s: expected.superseded_evidence overlaps allowed_evidence" % where)
        if forbidden & (allowed | superseded):
            raise Invalid("%s: expected.forbidden_evidence overlaps allowed or superseded evidence" % where)
        markers = [m.lower() for m in exp.get("forbidden_markers", [])]
        return (obj["id"], obj.get("persona", ""), exp["action"], allowed,
                exp.get("required_evidence", []), any_of, superseded, forbidden, markers)
    check_fields(obj, V1_CASE, where)
    allowed = unique(obj["allowed_ids"], where + " allowed_ids")
    required = obj["relevant_ids"]
    unique(required, where + " relevant_ids")
    for doc in required:
        if doc not in allowed:
            raise Invalid("%s: relevant id %r is not in allowed_ids" % (where, doc))
    action = "block" if obj["must_abstain"] else "answer"
    return (obj["id"], obj.get("persona", ""), action, allowed, required, [], set(), set(), [])


def read_result(obj, i):
    """Validates one result: (id, retrieved, cited, response, answer_text)."""
    where = "result #%d" % (i + 1)
    if type(obj) is dict and type(obj.get("id")) is str:
        where += " (%s)" % obj["id"]
    if type(obj) is dict and "abstained" in obj:
        check_fields(obj, V1_RESULT, where)
        response = "block" if obj["abstained"] else "answer"
        return (obj["id"], obj["retrieved_ids"], obj["cited_ids"], response, "")
    check_fields(obj, V2_RESULT, where)
    response = obj.get("response")
    if response is None:
        # The rule: omitted means answer when it cites something.
        response = "answer" if obj["cited_ids"] else "not_found"
    elif response not in ACTIONS:
        raise Invalid("%s: response %r is not one of %s" % (where, response, ", ".join(ACTIONS)))
    return (obj["id"], obj["retrieved_ids"], obj["cited_ids"], response, obj.get("answer_text", ""))


def load(path, what):
    try:
        with open(path, "rb") as f:
            data = json.load(f, object_pairs_hook=strict_object)
    except Invalid as e:
        raise Invalid("%s: %s" % (path, e))
    except (ValueError, OSError) as e:
        raise Invalid("%s: malformed JSON: %s" % (path, e))
    if type(data) is not list:
        raise Invalid("%s: the %s list must be a JSON array" % (path, what))
    return data


def best_recall(top, required, any_of):
    """|top ∩ target| / |target| with target the required evidence, or the
    best over required ∪ each alternative sufficient set."""
    if not any_of:
        return sum(1 for doc in required if doc in top) / len(required)
    best = 0.0
    for alt in any_of:
        target = set(required) | set(alt)
        best = max(best, sum(1 for doc in target if doc in top) / len(target))
    return best


def evaluate(cases_path, results_path, k):
    cases = [read_case(c, i) for i, c in enumerate(load(cases_path, "case"))]
    if not cases:
        raise Invalid("%s: no cases to evaluate" % cases_path)
    results = {}
    for i, r in enumerate(load(results_path, "result")):
        res = read_result(r, i)
        if res[0] in results:
            raise Invalid("%s: result #%d (%s): duplicate result id" % (results_path, i + 1, res[0]))
        results[res[0]] = res
    seen = set()
    for c in cases:
        if c[0] in seen:
            raise Invalid("%s: duplicate case id %r" % (cases_path, c[0]))
        seen.add(c[0])
        if c[0] not in results:
            # A truncated export must be an error, not a better score.
            raise Invalid("%s: case %r has no result" % (results_path, c[0]))
    for rid in results:
        if rid not in seen:
            raise Invalid("%s: result %r has no case" % (results_path, rid))

    s = {"cases": len(cases), "answerable": 0, "required_block": 0,
         "withheld_answerable": 0, "disclosures": 0, "failed_to_abstain": 0,
         "forbidden_cases": 0, "invalid_citation_cases": 0}
    recall_sum = rr_sum = 0.0
    recall_n = 0
    for case_id, _persona, action, allowed, required, any_of, superseded, forbidden_set, markers in cases:
        _, retrieved, cited, response, text = results[case_id]
        # Readable: allowed or a superseded version, and not named forbidden.
        # Anything else retrieved (at every rank, not only the first k) or
        # cited is a leak.
        leaked = False
        for doc in retrieved + cited:
            if (doc not in allowed and doc not in superseded) or doc in forbidden_set:
                leaked = True
                break
        if not leaked and text and markers:
            lower = text.lower()
            for marker in markers:
                if marker in lower:
                    leaked = True
                    break
        retrieved_set = set(retrieved)
        for doc in cited:
            if doc not in retrieved_set or (doc not in allowed and doc not in superseded) or doc in forbidden_set:
                s["invalid_citation_cases"] += 1
                break
        if leaked:
            s["forbidden_cases"] += 1
        if action == "answer":
            s["answerable"] += 1
            if response != "answer":
                s["withheld_answerable"] += 1  # block, not_found or another status
            relevant = list(required)
            for alt in any_of:
                for doc in alt:
                    if doc not in relevant:
                        relevant.append(doc)
            if relevant:
                # Distinct IDs of the first k: a repeat is never credited twice
                # and does not push a later hit down.
                top = []
                for doc in retrieved[:k]:
                    if doc not in top:
                        top.append(doc)
                rr = 0.0
                for rank, doc in enumerate(top, 1):
                    if doc in relevant:
                        rr = 1.0 / rank
                        break
                recall_sum += best_recall(top, required, any_of)
                rr_sum += rr
                recall_n += 1
        elif action == "block":
            s["required_block"] += 1
            if leaked:
                s["disclosures"] += 1
            elif response == "answer":
                s["failed_to_abstain"] += 1

    # An undefined mean is null, never 0 or 1.
    s["recall_at_k"] = {"value": recall_sum / recall_n if recall_n else None,
                        "numerator": recall_sum, "denominator": recall_n}
    s["mrr_at_k"] = {"value": rr_sum / recall_n if recall_n else None,
                     "numerator": rr_sum, "denominator": recall_n}
    gates = [("no_forbidden", s["forbidden_cases"]),
             ("citation_validity", s["invalid_citation_cases"]),
             ("no_failed_to_abstain", s["failed_to_abstain"])]
    s["gates"] = [{"name": n, "passed": v == 0, "value": v} for n, v in gates]
    s["passed"] = all(v == 0 for _, v in gates)
    s["k"] = k
    return s


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases")
    p.add_argument("results")
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    if args.k < 1:
        print("baseline: --k must be at least 1", file=sys.stderr)
        return 2
    try:
        summary = evaluate(args.cases, args.results, args.k)
    except Invalid as e:
        print("baseline: %s" % e, file=sys.stderr)
        return 2
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
