// Command hello is the small program the image builder's tests put on the
// base: it links one module besides the standard library, so the SBOM has a
// dependency to list.
package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	ref, err := name.ParseReference("example.test/hello:v1")
	if err != nil {
		panic(err)
	}
	fmt.Println(ref.Context().RepositoryStr())
}
