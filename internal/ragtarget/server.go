package ragtarget

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/ragcanary/ragcanary/internal/contract"
)

// maxRequestBytes bounds request bodies; the contract caps a document body at 1 MB.
const maxRequestBytes = 2 << 20

// Operation IDs from the contract, as the generated strict handler names them.
var (
	personaOps = map[string]bool{"Search": true, "Answer": true, "StartConversation": true, "FollowUp": true}
	publicOps  = map[string]bool{"GetHealth": true, "GetCapabilities": true}
)

type principalKey struct{}

// newHandler wires the generated contract server: request validation against
// the embedded OpenAPI document, fault injection, then per-operation auth.
func (s *Service) newHandler() (http.Handler, error) {
	strict := contract.NewStrictHandlerWithOptions(&api{s: s}, []contract.StrictMiddlewareFunc{s.authenticate}, contract.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, _ error) {
			writeProblem(w, http.StatusBadRequest, "bad_request", "the request body is not valid JSON for this operation")
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, err error) {
			s.cfg.Logger.Error("request failed", "error", err)
			writeProblem(w, http.StatusInternalServerError, "internal", "the request failed")
		},
	})
	routes := contract.HandlerWithOptions(strict, contract.StdHTTPServerOptions{
		ErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, _ error) {
			writeProblem(w, http.StatusBadRequest, "bad_request", "invalid path parameter")
		},
	})
	validated, err := validateRequests(routes)
	if err != nil {
		return nil, err
	}
	var h = validated
	if s.cfg.Faults.active() {
		h = newFaultInjector(s.cfg.Faults, s.cfg.Clock, h)
	}
	return limitBody(s.accessLog(s.withSurfaces(h))), nil
}

// withSurfaces serves the assistant-shaped endpoints (chat.go,
// foreignsearch.go) beside the contract. They are not in the OpenAPI
// document, so they pass neither its validation nor its fault injection.
// Exact paths, not a ServeMux: a ServeMux would clean and redirect paths the
// contract handler has always seen raw.
func (s *Service) withSurfaces(contractRoutes http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case chatCompletionsPath:
			s.serveChat(w, r)
		case foreignSearchPath:
			s.serveForeignSearch(w, r)
		default:
			contractRoutes.ServeHTTP(w, r)
		}
	})
}

// accessLog logs every call at debug level: who called (the remote address,
// which is what tells two operator replicas apart) what, and the status.
// Never a header: they carry the credentials.
func (s *Service) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.cfg.Logger.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.cfg.Logger.Debug("call", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "status", rec.status)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush lets streamed replies through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		next.ServeHTTP(w, r)
	})
}

// authenticate resolves the bearer token per operation: persona calls need a
// persona token (its principal goes into the context), source calls need the
// source token, discovery calls need none. A refusal is written here and the
// handler is not called.
func (s *Service) authenticate(next contract.StrictHandlerFunc, op string) contract.StrictHandlerFunc {
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, req any) (any, error) {
		if publicOps[op] {
			return next(ctx, w, r, req)
		}
		token, ok := bearerToken(r)
		if !ok {
			writeProblem(w, http.StatusUnauthorized, "unauthenticated", "a bearer token is required")
			return nil, nil
		}
		if !personaOps[op] {
			if !equalSecret(token, s.cfg.SourceToken) {
				writeProblem(w, http.StatusUnauthorized, "unauthenticated", "the source credential was not accepted")
				return nil, nil
			}
			return next(ctx, w, r, req)
		}
		principal, ok := s.lookupPersona(ctx, token)
		if !ok {
			writeProblem(w, http.StatusUnauthorized, "unauthenticated", "the persona credential was not accepted")
			return nil, nil
		}
		return next(context.WithValue(ctx, principalKey{}, principal), w, r, req)
	}
}

// lookupPersona compares against every token in constant time so response
// timing does not reveal how much of a token matched; a token that is none
// of them may be a JWT of the configured issuer.
func (s *Service) lookupPersona(ctx context.Context, token string) (string, bool) {
	var found string
	for t, p := range s.cfg.Tokens {
		if equalSecret(token, t) {
			found = p
		}
	}
	if found == "" && s.jwt != nil && looksLikeJWT(token) {
		p, err := s.jwt.principal(ctx, token)
		return p, err == nil
	}
	return found, found != ""
}

func equalSecret(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func bearerToken(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || h[:len(prefix)] != prefix {
		return "", false
	}
	return h[len(prefix):], true
}

func principalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

func writeProblem(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(contract.Problem{Code: code, Message: msg})
}

// api implements the generated strict server interface on top of Service.
type api struct{ s *Service }

var _ contract.StrictServerInterface = (*api)(nil)

func (a *api) GetHealth(context.Context, contract.GetHealthRequestObject) (contract.GetHealthResponseObject, error) {
	return contract.GetHealth200JSONResponse{Status: contract.Ok}, nil
}

func (a *api) GetCapabilities(context.Context, contract.GetCapabilitiesRequestObject) (contract.GetCapabilitiesResponseObject, error) {
	c := a.s.Capabilities()
	methods := make([]contract.RevocationMethod, 0, len(c.RevocationMethods))
	for _, m := range c.RevocationMethods {
		methods = append(methods, contract.RevocationMethod(m))
	}
	return contract.GetCapabilities200JSONResponse{ContractVersion: c.ContractVersion, RevocationMethods: methods, Answer: c.Answer,
		Conversation: &c.Conversation}, nil
}

func (a *api) PutDocument(_ context.Context, req contract.PutDocumentRequestObject) (contract.PutDocumentResponseObject, error) {
	a.s.src.putDocument(req.DocumentId, req.Body.Title, req.Body.Body, req.Body.Principals)
	return contract.PutDocument204Response{}, nil
}

func (a *api) DeleteDocument(_ context.Context, req contract.DeleteDocumentRequestObject) (contract.DeleteDocumentResponseObject, error) {
	a.s.src.deleteDocument(req.DocumentId)
	return contract.DeleteDocument204Response{}, nil
}

func (a *api) PutGrant(_ context.Context, req contract.PutGrantRequestObject) (contract.PutGrantResponseObject, error) {
	if !a.s.src.grant(req.DocumentId, req.Principal) {
		return contract.PutGrant404JSONResponse{NotFoundJSONResponse: contract.NotFoundJSONResponse{Code: "not_found", Message: "no such document"}}, nil
	}
	return contract.PutGrant204Response{}, nil
}

func (a *api) DeleteGrant(_ context.Context, req contract.DeleteGrantRequestObject) (contract.DeleteGrantResponseObject, error) {
	a.s.src.revoke(req.DocumentId, req.Principal)
	return contract.DeleteGrant204Response{}, nil
}

func (a *api) PutGroupMember(_ context.Context, req contract.PutGroupMemberRequestObject) (contract.PutGroupMemberResponseObject, error) {
	if a.s.groups != nil {
		return contract.PutGroupMember400JSONResponse{BadRequestJSONResponse: groupsFromDirectory()}, nil
	}
	a.s.src.addMember(req.GroupId, req.Principal)
	a.s.membershipChanged(req.Principal)
	return contract.PutGroupMember204Response{}, nil
}

func (a *api) DeleteGroupMember(_ context.Context, req contract.DeleteGroupMemberRequestObject) (contract.DeleteGroupMemberResponseObject, error) {
	if a.s.groups != nil {
		return contract.DeleteGroupMember400JSONResponse{BadRequestJSONResponse: groupsFromDirectory()}, nil
	}
	a.s.src.removeMember(req.GroupId, req.Principal)
	a.s.membershipChanged(req.Principal)
	return contract.DeleteGroupMember204Response{}, nil
}

// membershipChanged invalidates the member's answers when groups resolve at
// query time: the change takes effect on the next query, so the cache is the
// only thing still holding the old view.
func (s *Service) membershipChanged(principal string) {
	if s.cfg.GroupsAtQueryTime && !s.cfg.CacheIgnoresACLChanges {
		s.cache.invalidate(map[string]struct{}{principal: {}})
	}
}

func (a *api) Search(ctx context.Context, req contract.SearchRequestObject) (contract.SearchResponseObject, error) {
	hits, err := a.s.search(ctx, principalFrom(ctx), req.Body.Query, req.Body.K)
	if err != nil {
		return nil, err
	}
	out := contract.Search200JSONResponse{Hits: make([]contract.Hit, 0, len(hits))}
	for _, h := range hits {
		out.Hits = append(out.Hits, contract.Hit{ChunkId: h.chunkID, DocumentId: h.docID, Score: h.score})
	}
	return out, nil
}

func (a *api) Answer(ctx context.Context, req contract.AnswerRequestObject) (contract.AnswerResponseObject, error) {
	ans, err := a.s.answer(ctx, principalFrom(ctx), req.Body.Question)
	if err != nil {
		return nil, err
	}
	return contract.Answer200JSONResponse(toAnswerResult(ans)), nil
}

func (a *api) StartConversation(ctx context.Context, req contract.StartConversationRequestObject) (contract.StartConversationResponseObject, error) {
	id, ans, err := a.s.startConversation(ctx, principalFrom(ctx), req.Body.Question)
	if err != nil {
		return nil, err
	}
	return contract.StartConversation201JSONResponse{ConversationId: id, Turn: toAnswerResult(ans)}, nil
}

func (a *api) FollowUp(ctx context.Context, req contract.FollowUpRequestObject) (contract.FollowUpResponseObject, error) {
	ans, err := a.s.followUp(ctx, principalFrom(ctx), req.ConversationId, req.Body.Question)
	if errors.Is(err, errNoConversation) {
		return contract.FollowUp404JSONResponse{NotFoundJSONResponse: contract.NotFoundJSONResponse{Code: "not_found", Message: "no such conversation"}}, nil
	}
	if err != nil {
		return nil, err
	}
	return contract.FollowUp200JSONResponse(toAnswerResult(ans)), nil
}

// toAnswerResult declares the answer's status and reason when it has them.
func toAnswerResult(a answer) contract.AnswerResult {
	out := contract.AnswerResult{Answer: a.text, Citations: a.citations}
	if a.status != "" {
		st := contract.AnswerStatus(a.status)
		out.Status = &st
	}
	if a.reason != "" {
		r := contract.AnswerReason(a.reason)
		out.Reason = &r
	}
	return out
}

// groupsFromDirectory refuses a membership change when a directory is the
// group authority. Refused rather than ignored: a client that believes it
// changed a group here (a Corpus without spec.directory) must learn that
// the change went nowhere, not measure a revocation that never happened.
// 400, not 403: clients read 403 as a refused credential, and retrying the
// request unchanged will never succeed, which is what 400 says.
func groupsFromDirectory() contract.BadRequestJSONResponse {
	return contract.BadRequestJSONResponse{Code: "groups_from_directory", Message: errGroupsFromDirectory.Error()}
}
