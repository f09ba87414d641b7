package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// readBody reads the whole body, which the route's limit bounds
// (http.MaxBytesReader): over it is 413.
func readBody(r *http.Request) ([]byte, *Problem) {
	raw, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, newProblem(r, http.StatusRequestEntityTooLarge, typeBlank, fmt.Sprintf("the body is over this route's limit of %d bytes", tooBig.Limit))
	}
	if err != nil {
		return nil, newProblem(r, http.StatusBadRequest, typeInvalidRequest, "the body could not be read: "+err.Error())
	}
	return raw, nil
}

// isJSON reports whether the request's Content-Type is application/json.
func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// decodeJSON reads a small JSON body into v strictly: one object, no
// unknown member. An empty body is {} when optional, else refused.
func decodeJSON(r *http.Request, v any, optional bool) *Problem {
	raw, prob := readBody(r)
	if prob != nil {
		return prob
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, "the body is empty; send a JSON object (see GET /v1/openapi.json)")
	}
	if !isJSON(r) {
		return unsupportedType(r, "application/json")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field != "" {
			return badRequest(r, typ.Field, fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value), "see the operation's request body in GET /v1/openapi.json")
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return badRequest(r, name, "is not a member of this request", "leave it out (see GET /v1/openapi.json)")
		}
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, "the body is not valid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, "the body holds data after its JSON object; send one object")
	}
	return nil
}

// unsupportedType is the 415 of a body of another media type.
func unsupportedType(r *http.Request, want string) *Problem {
	got := r.Header.Get("Content-Type")
	if got == "" {
		got = "none"
	}
	p := newProblem(r, http.StatusUnsupportedMediaType, typeUnsupportedMedia, fmt.Sprintf("Content-Type is %s; send %s", got, want))
	p.Errors = []FieldProblem{{Field: "Content-Type", Problem: "is " + got, Fix: "send " + want}}
	return p
}

// jsonKind names a Go kind the way a JSON author reads it.
func jsonKind(kind string) string {
	switch kind {
	case "slice", "array":
		return "a list"
	case "struct", "map":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	default:
		return "a number"
	}
}
