package ragtarget

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// foreignSearchPath is a search API in Azure AI Search's shape rather than
// the contract's: a surface ragcanary must map onto its own notion of a hit.
const foreignSearchPath = "/indexes/docs/search"

// Bounds of the foreign search. top defaults to Azure AI Search's page
// size and is capped at the contract's k, since the retrieval is the same.
const (
	defaultForeignTop = 50
	maxForeignTop     = 100
)

type foreignSearchRequest struct {
	Search *string `json:"search"`
	Top    *int    `json:"top"`
}

type foreignSearchHit struct {
	Score      float64 `json:"@search.score"`
	ID         string  `json:"id"`
	DocumentID string  `json:"documentId"`
	Content    string  `json:"content"`
}

type foreignSearchReply struct {
	Value []foreignSearchHit `json:"value"`
}

// serveForeignSearch runs the contract's Search for the persona whose token
// is in the api-key header. Azure AI Search takes its key only there, so a
// bearer token is refused: a prober that sends the wrong header must see it.
func (s *Service) serveForeignSearch(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeAzureError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "only POST is supported")
		return
	}
	principal, ok := s.lookupPersona(r.Context(), r.Header.Get("api-key"))
	if !ok {
		writeAzureError(w, http.StatusForbidden, "Forbidden", "the api-key was not accepted")
		return
	}
	query, top, err := decodeForeignSearch(r)
	if err != nil {
		writeAzureError(w, http.StatusBadRequest, "InvalidRequestParameter", err.Error())
		return
	}
	hits, err := s.search(r.Context(), principal, query, top)
	if err != nil {
		s.cfg.Logger.Error("foreign search failed", "error", err)
		writeAzureError(w, http.StatusInternalServerError, "InternalServerError", "the request failed")
		return
	}
	out := foreignSearchReply{Value: make([]foreignSearchHit, 0, len(hits))}
	for _, h := range hits {
		out.Value = append(out.Value, foreignSearchHit{Score: h.score, ID: h.chunkID, DocumentID: h.docID, Content: h.text})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// decodeForeignSearch applies the contract's bounds on query and k to
// search and top. Messages never echo request values.
func decodeForeignSearch(r *http.Request) (string, int, error) {
	var req foreignSearchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return "", 0, errors.New("the request body is not valid JSON")
	}
	if req.Search == nil {
		return "", 0, errors.New("search is required")
	}
	if n := utf8.RuneCountInString(*req.Search); n < 1 || n > maxQuestionChars {
		return "", 0, fmt.Errorf("search must have 1 to %d characters", maxQuestionChars)
	}
	top := defaultForeignTop
	if req.Top != nil {
		top = *req.Top
	}
	if top < 1 || top > maxForeignTop {
		return "", 0, fmt.Errorf("top must be between 1 and %d", maxForeignTop)
	}
	return *req.Search, top, nil
}

// azureError is Azure's error body.
type azureError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeAzureError(w http.ResponseWriter, status int, code, msg string) {
	var body azureError
	body.Error.Code, body.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
