package httpapi

import (
	_ "embed"
	"net/http"
)

// Document is the API's contract, OpenAPI 3.1 (openapi.json), served at
// GET /v1/openapi.json.
//
//go:embed openapi.json
var Document []byte

// getOpenAPI is GET /v1/openapi.json; anyone may read it.
func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	writeRaw(w, http.StatusOK, "application/json", Document)
	return nil
}
