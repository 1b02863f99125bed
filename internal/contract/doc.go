// Package contract holds the Go code generated from api/contract/driver.v1.yaml:
// models, a client and a strict net/http server. The http driver and ragtarget
// both use it, so the client, the server and the document cannot drift apart.
package contract

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../api/contract/driver.v1.yaml
