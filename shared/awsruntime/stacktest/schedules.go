package stacktest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// The slot schedules' settings the stack's functions are told of
// (awsruntime's EnvScheduleGroup …). No schedule fires here.
const (
	ScheduleGroup         = "stack-schedules"
	TriggerFunctionARN    = "arn:aws:lambda:us-east-1:000000000000:function:stack-trigger"
	SchedulerRoleARN      = "arn:aws:iam::000000000000:role/stack-scheduler"
	ScheduleDeadLetterARN = "arn:aws:sqs:us-east-1:000000000000:stack-schedule-dlq"
)

// Schedules stands in for EventBridge Scheduler's CreateSchedule and
// UpdateSchedule (REST-JSON, API_CreateSchedule.html): a create of a
// name that exists is 409 ConflictException, an update of one that does
// not 404 ResourceNotFoundException, a group other than ScheduleGroup
// 404. It keeps the names of the schedules written; nothing fires.
// Scheduler has no emulator to run here.
type Schedules struct {
	mu    sync.Mutex
	names map[string]bool
}

// Names lists the schedules written, sorted.
func (s *Schedules) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// start serves the stand-in on 127.0.0.1 until t ends and returns its URL.
func (s *Schedules) start(t testing.TB) string {
	s.names = map[string]bool{}
	fail := func(w http.ResponseWriter, status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"Message": msg})
	}
	write := func(create bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			var in struct{ GroupName string }
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
				fail(w, http.StatusBadRequest, "ValidationException", err.Error())
				return
			}
			if in.GroupName != ScheduleGroup {
				fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule group "+in.GroupName+" does not exist.")
				return
			}
			s.mu.Lock()
			exists := s.names[name]
			if create != exists {
				s.names[name] = true
			}
			s.mu.Unlock()
			switch {
			case create && exists:
				fail(w, http.StatusConflict, "ConflictException", "Schedule "+name+" already exists.")
				return
			case !create && !exists:
				fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"ScheduleArn": "arn:aws:scheduler:us-east-1:000000000000:schedule/" + ScheduleGroup + "/" + name})
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /schedules/{name}", write(true))
	mux.HandleFunc("PUT /schedules/{name}", write(false))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "UnknownOperationException", "the stand-in serves CreateSchedule and UpdateSchedule only")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
