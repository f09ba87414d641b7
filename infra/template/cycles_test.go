package template

import (
	"fmt"
	"slices"
	"strings"
)

// checkDependencies: the resources' references form no cycle.
// CloudFormation creates a resource after everything it refers to (Ref,
// Fn::GetAtt, Fn::Sub, DependsOn) and refuses a template whose references
// go round ("Circular dependency between resources"), which nothing short
// of a deploy reports. A SAM function also refers to what the Globals
// give every function (its environment) and to what its policies name
// (they become its generated role, which the function needs first).
func checkDependencies(_ *contract, t *tmpl) []string {
	res := asMap(t.raw["Resources"])
	globals := asMap(asMap(t.raw["Globals"])["Function"])
	edges := map[string][]string{}
	for _, id := range sortedKeys(res) {
		r := asMap(res[id])
		var to []string
		to = append(to, references(r["Properties"])...)
		for _, d := range asList(r["DependsOn"]) {
			if s, ok := d.(string); ok {
				to = append(to, s)
			}
		}
		if r["Type"] == "AWS::Serverless::Function" {
			to = append(to, references(globals)...)
		}
		for _, n := range to {
			if _, ok := res[n]; ok && n != id {
				edges[id] = append(edges[id], n)
			}
		}
		slices.Sort(edges[id])
		edges[id] = slices.Compact(edges[id])
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var problems []string
	var path []string
	var visit func(id string)
	visit = func(id string) {
		state[id] = onPath
		path = append(path, id)
		for _, n := range edges[id] {
			switch state[n] {
			case onPath:
				// The cycle from its least id, whichever it was entered by.
				i := slices.Index(path, n)
				ring := path[i:]
				least := slices.Index(ring, slices.Min(ring))
				cycle := append(append(append([]string(nil), ring[least:]...), ring[:least]...), ring[least])
				problems = append(problems, fmt.Sprintf("circular references: %s (CloudFormation refuses the template)", strings.Join(cycle, " → ")))
			case unseen:
				visit(n)
			}
		}
		path = path[:len(path)-1]
		state[id] = done
	}
	for _, id := range sortedKeys(res) {
		if state[id] == unseen {
			visit(id)
		}
	}
	return problems
}
