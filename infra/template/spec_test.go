package template

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// specFile is the CloudFormation and SAM resource specification of
// @aws-cdk/aws-service-spec (installed by `make emulators`), relative to
// the module root: one JSON document (gzip) holding a database of
// entities, among them "resource" (one per CloudFormation type, with
// properties and attributes) and "typeDefinition" (the property types
// resources refer to by "$id").
const specFile = "infra/emulators/node_modules/@aws-cdk/aws-service-spec/db.json.gz"

// spec is the part of the specification the checks use.
type spec struct {
	resources map[string]*specResource // by CloudFormation type
	types     map[string]*specTypeDef  // by $id
}

type specResource struct {
	ID         string                  `json:"$id"`
	Type       string                  `json:"cloudFormationType"`
	Properties map[string]specProperty `json:"properties"`
	Attributes map[string]specProperty `json:"attributes"`
}

type specTypeDef struct {
	ID         string                  `json:"$id"`
	Name       string                  `json:"name"`
	Properties map[string]specProperty `json:"properties"`
}

type specProperty struct {
	Type     specType `json:"type"`
	Required bool     `json:"required"`
}

// specType is a property's type: string, integer, number, boolean,
// date-time, json (anything), tag ({Key, Value}), array and map (of
// Element), ref (a typeDefinition) or union (any of Types).
type specType struct {
	Type      string     `json:"type"`
	Element   *specType  `json:"element"`
	Types     []specType `json:"types"`
	Reference *struct {
		ID string `json:"$ref"`
	} `json:"reference"`
	AllowedValues []any `json:"allowedValues"`
}

// loadSpec reads the specification at path.
func loadSpec(path string) (*spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the resource specification: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read the resource specification %s: %w", path, err)
	}
	var db struct {
		Schema struct {
			Resource struct {
				Entities []*specResource `json:"entities"`
			} `json:"resource"`
			TypeDefinition struct {
				Entities []*specTypeDef `json:"entities"`
			} `json:"typeDefinition"`
		} `json:"schema"`
	}
	if err := json.NewDecoder(zr).Decode(&db); err != nil {
		return nil, fmt.Errorf("decode the resource specification %s: %w", path, err)
	}
	s := &spec{resources: map[string]*specResource{}, types: map[string]*specTypeDef{}}
	for _, r := range db.Schema.Resource.Entities {
		s.resources[r.Type] = r
	}
	for _, t := range db.Schema.TypeDefinition.Entities {
		s.types[t.ID] = t
	}
	if len(s.resources) < 1000 || s.resources["AWS::Serverless::Function"] == nil || s.resources["AWS::Scheduler::Schedule"] == nil {
		return nil, fmt.Errorf("resource specification %s: %d resource types, AWS::Serverless::Function or AWS::Scheduler::Schedule missing: not the database this test reads", path, len(s.resources))
	}
	return s, nil
}

// newerSAMProperty is a SAM property the specification does not know yet
// (its SAM part lags SAM); its value is checked as the CloudFormation
// property SAM passes it to.
type newerSAMProperty struct {
	// doc is the SAM documentation of the property.
	doc string
	// as is the CloudFormation resource type and property it becomes.
	asType, asProperty string
	// typ is its type when it becomes no CloudFormation property (a SAM
	// switch).
	typ specType
}

// newerSAMProperties is the allow-list, by SAM resource type (or the
// specification's name of a SAM property type) and property.
var newerSAMProperties = map[string]map[string]newerSAMProperty{
	"AWS::Serverless::HttpApi": {
		"AccessLogSettings": {
			doc:    "https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-resource-httpapi.html#sam-httpapi-accesslogsettings",
			asType: "AWS::ApiGatewayV2::Stage", asProperty: "AccessLogSettings",
		},
	},
	"HttpApiAuth": {
		"EnableIamAuthorizer": {
			doc: "https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-httpapi-httpapiauth.html",
			typ: specType{Type: "boolean"},
		},
	},
	"AWS::Serverless::Function": {
		// Also a Globals property:
		// https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-specification-template-anatomy-globals.html
		"LoggingConfig": {
			doc:    "https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-resource-function.html#sam-function-loggingconfig",
			asType: "AWS::Lambda::Function", asProperty: "LoggingConfig",
		},
	},
}

// optionalAfterAll lists properties the specification marks required
// that the service's own documentation says are not, by the
// specification's type name, each with that documentation.
var optionalAfterAll = map[string]map[string]string{
	// A function's asynchronous invocation config may name a failure
	// destination alone (the trigger's).
	"EventInvokeDestinationConfig": {
		"OnSuccess": "https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-eventinvokedestinationconfiguration.html",
		"OnFailure": "https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-eventinvokedestinationconfiguration.html",
	},
}

// resourceKeys are the keys a resource may have besides Type and
// Properties (CloudFormation's resource attributes).
var resourceKeys = []string{"Type", "Properties", "DependsOn", "Metadata", "Condition", "DeletionPolicy", "UpdateReplacePolicy", "UpdatePolicy", "CreationPolicy"}

// templateKeys are the sections of a SAM template.
var templateKeys = []string{"AWSTemplateFormatVersion", "Transform", "Description", "Metadata", "Parameters", "Mappings", "Conditions", "Rules", "Resources", "Outputs", "Globals"}

// parameterKeys and outputKeys are what a parameter and an output may say.
var (
	parameterKeys = []string{"Type", "Default", "AllowedPattern", "AllowedValues", "ConstraintDescription", "Description", "MaxLength", "MinLength", "MaxValue", "MinValue", "NoEcho"}
	outputKeys    = []string{"Value", "Description", "Export", "Condition"}
)

// validateTemplate checks the template's sections, parameters, outputs,
// every resource's keys and properties, and Globals' Function properties
// against the specification.
func (s *spec) validateTemplate(doc map[string]any) []string {
	var problems []string
	for _, k := range sortedKeys(doc) {
		if !slices.Contains(templateKeys, k) {
			problems = append(problems, fmt.Sprintf("%s: not a section of a SAM template", k))
		}
	}
	for _, name := range sortedKeys(asMap(doc["Parameters"])) {
		problems = append(problems, unknownKeys("Parameters."+name, asMap(asMap(doc["Parameters"])[name]), parameterKeys)...)
	}
	for _, name := range sortedKeys(asMap(doc["Outputs"])) {
		problems = append(problems, unknownKeys("Outputs."+name, asMap(asMap(doc["Outputs"])[name]), outputKeys)...)
	}
	res := asMap(doc["Resources"])
	for _, id := range sortedKeys(res) {
		r := asMap(res[id])
		path := "Resources." + id
		problems = append(problems, unknownKeys(path, r, resourceKeys)...)
		typ, _ := r["Type"].(string)
		def := s.resources[typ]
		if def == nil {
			problems = append(problems, fmt.Sprintf("%s: type %q is not in the resource specification", path, typ))
			continue
		}
		props, ok := r["Properties"].(map[string]any)
		if !ok && r["Properties"] != nil {
			problems = append(problems, fmt.Sprintf("%s.Properties: want an object", path))
			continue
		}
		problems = append(problems, s.validateProperties(path+".Properties", typ, def.Properties, props, true)...)
	}
	for _, section := range sortedKeys(asMap(doc["Globals"])) {
		typ := "AWS::Serverless::" + section
		def := s.resources[typ]
		if def == nil {
			problems = append(problems, fmt.Sprintf("Globals.%s: %s is not in the resource specification", section, typ))
			continue
		}
		problems = append(problems, s.validateProperties("Globals."+section, typ, def.Properties, asMap(asMap(doc["Globals"])[section]), false)...)
	}
	return problems
}

// unknownKeys names the keys of m that are not in allowed.
func unknownKeys(path string, m map[string]any, allowed []string) []string {
	var problems []string
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			problems = append(problems, fmt.Sprintf("%s.%s: not one of %s", path, k, strings.Join(allowed, ", ")))
		}
	}
	return problems
}

// validateProperties checks props against defs: every name known (or in
// the SAM allow-list of typ), every value of its type, and, when
// required is set, every required property present (Globals need not
// hold them).
func (s *spec) validateProperties(path, typ string, defs map[string]specProperty, props map[string]any, required bool) []string {
	var problems []string
	for _, name := range sortedKeys(props) {
		def, ok := defs[name]
		if !ok {
			if extra, ok := newerSAMProperties[typ][name]; ok {
				def = specProperty{Type: extra.typ}
				if extra.asType != "" {
					def = s.resources[extra.asType].Properties[extra.asProperty]
				}
			} else {
				problems = append(problems, fmt.Sprintf("%s.%s: not a property of %s", path, name, typ))
				continue
			}
		}
		problems = append(problems, s.validateValue(path+"."+name, def.Type, props[name])...)
	}
	if required {
		for _, name := range sortedKeys(defs) {
			if _, ok := optionalAfterAll[typ][name]; ok {
				continue
			}
			if _, ok := props[name]; defs[name].Required && !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is required", path, name))
			}
		}
	}
	return problems
}

// validateValue checks one value against its type. Intrinsic functions
// are accepted anywhere: what they return is known only at deployment.
func (s *spec) validateValue(path string, t specType, v any) []string {
	if _, _, ok := intrinsic(v); ok {
		return nil
	}
	want := func(what string) []string {
		b, _ := json.Marshal(v)
		return []string{fmt.Sprintf("%s: want %s, got %s", path, what, b)}
	}
	switch t.Type {
	case "json":
		return nil
	case "string", "date-time":
		str, ok := v.(string)
		if !ok {
			return want("a string")
		}
		if len(t.AllowedValues) > 0 && !slices.ContainsFunc(t.AllowedValues, func(a any) bool { return fmt.Sprint(a) == str }) {
			return []string{fmt.Sprintf("%s: %q is not one of %v", path, str, t.AllowedValues)}
		}
	case "integer":
		n, ok := number(v)
		if !ok || n != math.Trunc(n) {
			return want("an integer")
		}
	case "number":
		if _, ok := number(v); !ok {
			return want("a number")
		}
	case "boolean":
		switch b := v.(type) {
		case bool:
		case string:
			if b != "true" && b != "false" {
				return want("a boolean")
			}
		default:
			return want("a boolean")
		}
	case "tag":
		m, ok := v.(map[string]any)
		if !ok {
			return want("a tag {Key, Value}")
		}
		return append(unknownKeys(path, m, []string{"Key", "Value"}),
			s.validateValue(path+".Key", specType{Type: "string"}, m["Key"])...)
	case "array":
		a, ok := v.([]any)
		if !ok {
			return want("a list")
		}
		var problems []string
		for i, e := range a {
			problems = append(problems, s.validateValue(fmt.Sprintf("%s[%d]", path, i), *t.Element, e)...)
		}
		return problems
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return want("an object")
		}
		var problems []string
		for _, k := range sortedKeys(m) {
			problems = append(problems, s.validateValue(path+"."+k, *t.Element, m[k])...)
		}
		return problems
	case "ref":
		def := s.types[t.Reference.ID]
		if def == nil {
			return []string{fmt.Sprintf("%s: the specification's type %s is missing", path, t.Reference.ID)}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return want("an object (" + def.Name + ")")
		}
		return s.validateProperties(path, def.Name, def.Properties, m, true)
	case "union":
		// Valid if any alternative accepts it; otherwise report the
		// closest alternative of the value's kind (a list's problems as a
		// list, not "want a string").
		var best []string
		bestMatches := false
		for i, alt := range t.Types {
			problems := s.validateValue(path, alt, v)
			if len(problems) == 0 {
				return nil
			}
			matches := kindOf(alt) == jsonKind(v)
			if i == 0 || (matches && !bestMatches) || (matches == bestMatches && len(problems) < len(best)) {
				best, bestMatches = problems, matches
			}
		}
		return best
	default:
		return []string{fmt.Sprintf("%s: the specification's type %q is unknown to this test", path, t.Type)}
	}
	return nil
}

// kindOf is the JSON kind a type wants: "list", "object" or "scalar".
func kindOf(t specType) string {
	switch t.Type {
	case "array":
		return "list"
	case "map", "ref", "tag", "json":
		return "object"
	}
	return "scalar"
}

// jsonKind is v's kind, as kindOf names them.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return "scalar"
}

// number reads a JSON number, or a string holding one (CloudFormation
// converts those).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

// sortedKeys is m's keys in order, for stable reports.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
