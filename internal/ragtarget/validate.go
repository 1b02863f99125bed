package ragtarget

import (
	"fmt"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/ragcanary/ragcanary/internal/contract"
)

// validateRequests checks every request against the OpenAPI document embedded
// in the generated code, so ragtarget enforces the contract's patterns and
// bounds exactly as documented rather than by hand-written checks.
func validateRequests(next http.Handler) (http.Handler, error) {
	spec, err := contract.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded contract: %w", err)
	}
	// Match any host: the document's server is relative.
	spec.Servers = openapi3.Servers{{URL: "/"}}
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, fmt.Errorf("route contract: %w", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !validRequest(w, r, router) {
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}

// validRequest writes a problem reply and returns false when r breaks the
// contract. Authentication is checked later by the server itself.
func validRequest(w http.ResponseWriter, r *http.Request, router routers.Router) bool {
	route, params, err := router.FindRoute(r)
	if err != nil {
		writeProblem(w, http.StatusNotFound, "not_found", "no such operation in contract v1")
		return false
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: false},
	}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		writeProblem(w, http.StatusBadRequest, "invalid_request", validationMessage(err))
		return false
	}
	return true
}

// validationMessage names the failing part of the request without echoing
// values; bodies could hold anything a caller sent.
func validationMessage(err error) string {
	switch e := err.(type) {
	case *openapi3filter.RequestError:
		if e.Parameter != nil {
			return fmt.Sprintf("parameter %q does not match the contract", e.Parameter.Name)
		}
		if e.RequestBody != nil {
			return "the request body does not match the contract"
		}
	}
	return "the request does not match the contract"
}
