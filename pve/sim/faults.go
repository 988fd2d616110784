package sim

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault makes matching requests misbehave. Method and Path select requests
// (Path is a prefix of the API path after /api2/json, e.g.
// "/nodes/pve1/qemu/100/status"); empty fields match everything. Exactly one
// effect should be set; Latency combines with any.
type Fault struct {
	Method string
	Path   string
	// Times limits how many requests the fault affects; 0 is unlimited.
	Times int

	// Latency delays the request before it is handled.
	Latency time.Duration
	// Status answers with this status and Message instead of handling the
	// request (nothing changes).
	Status  int
	Message string
	// HTML answers 502 with a proxy's HTML error page (nothing changes).
	HTML bool
	// InvalidJSON handles the request, then sends a body that is not JSON.
	InvalidJSON bool
	// Hang blocks until the client goes away; nothing changes.
	Hang bool
	// DropAfterApply handles the request (a write takes effect), then closes
	// the connection without answering: the "outcome unknown" case.
	DropAfterApply bool
	// Hold handles the request (a write takes effect), then holds the
	// answer this long before giving it (or dropping the connection, with
	// DropAfterApply); a client that goes away meanwhile gets nothing. It
	// is how a test kills a caller after PVE acted and before it heard.
	Hold time.Duration
	// Reached, when set, is sent the request's "METHOD /path" when the
	// fault takes it (without blocking: a full channel misses it). It
	// tells a test that a request is where the fault holds it.
	Reached chan<- string
}

// TaskFault changes how tasks of one type end: Fail makes them end with
// that error, Warnings with "WARNINGS: n" (the work is done), and Slow
// multiplies their duration.
type TaskFault struct {
	Type     string // qmstart, vzdump, ...; "" for all
	Fail     string
	Warnings int
	Slow     float64
}

type faultSet struct {
	mu    sync.Mutex
	reqs  []*activeFault
	tasks []TaskFault
}

type activeFault struct {
	Fault
	left int
}

// InjectFault adds a request fault.
func (s *Sim) InjectFault(f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.reqs = append(s.faults.reqs, &activeFault{Fault: f, left: f.Times})
}

// InjectTaskFault adds a task fault.
func (s *Sim) InjectTaskFault(f TaskFault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.tasks = append(s.faults.tasks, f)
}

// ClearFaults removes every fault.
func (s *Sim) ClearFaults() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.reqs, s.faults.tasks = nil, nil
}

// matchFault returns the first live fault for a request and uses it up.
func (s *Sim) matchFault(method, apiPath string) *activeFault {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	for i, f := range s.faults.reqs {
		if (f.Method != "" && !strings.EqualFold(f.Method, method)) || !strings.HasPrefix(apiPath, f.Path) {
			continue
		}
		if f.Times > 0 {
			f.left--
			if f.left <= 0 {
				s.faults.reqs = append(s.faults.reqs[:i:i], s.faults.reqs[i+1:]...)
			}
		}
		if f.Reached != nil {
			select {
			case f.Reached <- method + " " + apiPath:
			default:
			}
		}
		return f
	}
	return nil
}

// taskFault is the fault for a task type.
func (s *Sim) taskFault(typ string) (TaskFault, bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	for _, f := range s.faults.tasks {
		if f.Type == "" || f.Type == typ {
			return f, true
		}
	}
	return TaskFault{}, false
}

// before applies the fault's effects that replace handling; it reports
// whether the response has been dealt with.
func (f *activeFault) before(w http.ResponseWriter, r *http.Request) bool {
	if f.Latency > 0 {
		select {
		case <-time.After(f.Latency):
		case <-r.Context().Done():
			return true
		}
	}
	switch {
	case f.Hang:
		// A hung PVE never answers: when the client gives up, the
		// connection is dropped, never closed with an empty 200.
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	case f.HTML:
		page := []byte("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>\r\n")
		writeRaw(w, http.StatusBadGateway, "Bad Gateway", "text/html", page)
		return true
	case f.Status != 0:
		msg := f.Message
		if msg == "" {
			msg = http.StatusText(f.Status)
		}
		writeError(w, failStatus(f.Status, "%s", msg))
		return true
	}
	return false
}

// after applies the effects that follow handling.
func (f *activeFault) after(w http.ResponseWriter, r *http.Request) bool {
	if f.Hold > 0 {
		select {
		case <-time.After(f.Hold):
		case <-r.Context().Done():
			panic(http.ErrAbortHandler) // the caller is gone: nobody hears
		}
	}
	switch {
	case f.DropAfterApply:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return true
			}
		}
		panic(http.ErrAbortHandler) // no hijacker: abort the response
	case f.InvalidJSON:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, rw, err := hj.Hijack(); err == nil {
				defer conn.Close()
				writeRawTo(rw.Writer, http.StatusOK, "OK", jsonType, []byte(`{"data": {"status": "runn`))
				rw.Flush()
				return true
			}
		}
		bw := bufio.NewWriter(w)
		bw.WriteString(`{"data": {"status": "runn`)
		bw.Flush()
		return true
	}
	return false
}
