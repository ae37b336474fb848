package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/scheme"
)

// apiStore is an in-memory API server for the few objects vgpu-device-plugin reads and writes
// on a machine without Kubernetes: its Node, the Pods bound to it, the device ConfigMaps it
// looks for (none: it falls back to the shipped defaults) and the Events it records. It
// answers the requests the plugin makes (GET, LIST with field selectors, WATCH with or
// without initial events, merge and JSON PATCH, POST, PUT) in JSON, keeps resource versions
// and refuses a patch whose resourceVersion precondition is stale with a 409, as the real
// API server does. Anything else is answered 404 and logged, so that a request this check
// does not model shows up in the output instead of being faked.
type apiStore struct {
	mu      sync.Mutex
	rv      int64
	objects map[string]object // by storeKey
	history []change          // every change, for watches that resume from a resource version
	changed chan struct{}     // closed and replaced on every change
	logf    func(format string, args ...any)
}

// object is one stored object as generic JSON, so that merge patches apply exactly as
// RFC 7386 says, without a round trip through Go types.
type object = map[string]any

type change struct {
	rv       int64
	resource string
	kind     string // ADDED, MODIFIED
	obj      object
}

// kinds are the resources served, with their kind and whether they are namespaced.
var kinds = map[string]struct {
	kind       string
	namespaced bool
}{
	"nodes":      {"Node", false},
	"pods":       {"Pod", true},
	"configmaps": {"ConfigMap", true},
	"events":     {"Event", true},
}

func newAPIStore(logf func(string, ...any)) *apiStore {
	return &apiStore{objects: map[string]object{}, changed: make(chan struct{}), logf: logf}
}

func storeKey(resource, namespace, name string) string {
	return resource + "/" + namespace + "/" + name
}

// put stores obj (typed or generic) under resource, assigning a resource version (and a uid
// and creation time to a new object), and records the change for watches. The caller holds
// no lock.
func (s *apiStore) put(resource string, obj any) (object, error) {
	o, err := toObject(obj)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putLocked(resource, o), nil
}

func (s *apiStore) putLocked(resource string, o object) object {
	meta := child(o, "metadata")
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	key := storeKey(resource, ns, name)
	kind := "MODIFIED"
	if _, ok := s.objects[key]; !ok {
		kind = "ADDED"
		if meta["uid"] == nil || meta["uid"] == "" {
			meta["uid"] = string(uuid.NewUUID())
		}
		if meta["creationTimestamp"] == nil {
			meta["creationTimestamp"] = time.Now().UTC().Format(time.RFC3339)
		}
	}
	s.rv++
	meta["resourceVersion"] = strconv.FormatInt(s.rv, 10)
	o["apiVersion"] = "v1"
	o["kind"] = kinds[resource].kind
	s.objects[key] = o
	s.history = append(s.history, change{rv: s.rv, resource: resource, kind: kind, obj: deepCopy(o)})
	close(s.changed)
	s.changed = make(chan struct{})
	return o
}

// get decodes a stored object into out (a typed object); false when there is none.
func (s *apiStore) get(resource, namespace, name string, out any) (bool, error) {
	s.mu.Lock()
	o, ok := s.objects[storeKey(resource, namespace, name)]
	var data []byte
	var err error
	if ok {
		data, err = json.Marshal(o)
	}
	s.mu.Unlock()
	if !ok || err != nil {
		return ok, err
	}
	return true, json.Unmarshal(data, out)
}

// waitChange returns a channel closed at the next change.
func (s *apiStore) waitChange() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func toObject(obj any) (object, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var o object
	return o, json.Unmarshal(data, &o)
}

func deepCopy(o object) object {
	data, _ := json.Marshal(o) // decoded from JSON: cannot fail
	var c object
	_ = json.Unmarshal(data, &c)
	return c
}

func child(o object, key string) object {
	c, ok := o[key].(map[string]any)
	if !ok {
		c = object{}
		o[key] = c
	}
	return c
}

// request is an API path taken apart: /api/v1[/namespaces/{ns}]/{resource}[/{name}].
type request struct {
	namespace, resource, name string
}

func parsePath(path string) (request, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 3 || parts[0] != "api" || parts[1] != "v1" {
		return request{}, false
	}
	parts = parts[2:]
	var r request
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		r.resource = parts[0]
	case 2:
		r.resource, r.name = parts[0], parts[1]
	default:
		return request{}, false
	}
	info, ok := kinds[r.resource]
	if !ok || (!info.namespaced && r.namespace != "") {
		return request{}, false
	}
	return r, true
}

func (s *apiStore) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := parsePath(req.URL.Path)
	if !ok {
		s.logf("fake API: no such path: %s %s", req.Method, req.URL.String())
		writeStatus(w, http.StatusNotFound, "NotFound", "this stand-in API server does not serve "+req.URL.Path)
		return
	}
	query := req.URL.Query()
	switch {
	case req.Method == http.MethodGet && r.name != "":
		s.serveGet(w, r)
	case req.Method == http.MethodGet && (query.Get("watch") == "true" || query.Get("watch") == "1"):
		s.serveWatch(w, req, r, query)
	case req.Method == http.MethodGet:
		s.serveList(w, r, query)
	case req.Method == http.MethodPatch && r.name != "":
		s.servePatch(w, req, r)
	case (req.Method == http.MethodPost && r.name == "") || (req.Method == http.MethodPut && r.name != ""):
		s.serveWrite(w, req, r)
	default:
		s.logf("fake API: method not served: %s %s", req.Method, req.URL.String())
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", req.Method+" is not served here")
	}
}

func (s *apiStore) serveGet(w http.ResponseWriter, r request) {
	s.mu.Lock()
	o, ok := s.objects[storeKey(r.resource, r.namespace, r.name)]
	var data []byte
	if ok {
		data, _ = json.Marshal(o)
	}
	s.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", r.resource, r.name))
		return
	}
	writeJSON(w, http.StatusOK, data)
}

// selector is a field selector of equality terms; only the fields the plugin selects on
// are understood, any other is refused so that it cannot silently match everything.
type selector map[string]string

var selectable = map[string][]string{
	"metadata.name":      {"metadata", "name"},
	"metadata.namespace": {"metadata", "namespace"},
	"spec.nodeName":      {"spec", "nodeName"},
}

func parseSelector(text string) (selector, error) {
	sel := selector{}
	if text == "" {
		return sel, nil
	}
	for _, term := range strings.Split(text, ",") {
		field, value, ok := strings.Cut(term, "=")
		field = strings.TrimSuffix(field, "=")
		value = strings.TrimPrefix(value, "=")
		if !ok || strings.HasSuffix(field, "!") {
			return nil, fmt.Errorf("field selector term %q: only equality is served", term)
		}
		if _, known := selectable[field]; !known {
			return nil, fmt.Errorf("field selector on %q is not served", field)
		}
		sel[field] = value
	}
	return sel, nil
}

func (sel selector) matches(o object) bool {
	for field, want := range sel {
		var v any = o
		for _, step := range selectable[field] {
			m, _ := v.(map[string]any)
			v = m[step]
		}
		got, _ := v.(string)
		if got != want {
			return false
		}
	}
	return true
}

func (r request) matches(resource string, o object) bool {
	if resource != r.resource {
		return false
	}
	ns, _ := child(o, "metadata")["namespace"].(string)
	return r.namespace == "" || ns == r.namespace
}

func (s *apiStore) serveList(w http.ResponseWriter, r request, query url.Values) {
	sel, err := parseSelector(query.Get("fieldSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	s.mu.Lock()
	keys := make([]string, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := []object{}
	for _, k := range keys {
		if o := s.objects[k]; r.matches(strings.SplitN(k, "/", 2)[0], o) && sel.matches(o) {
			items = append(items, o)
		}
	}
	list := object{
		"apiVersion": "v1",
		"kind":       kinds[r.resource].kind + "List",
		"metadata":   object{"resourceVersion": strconv.FormatInt(s.rv, 10)},
		"items":      items,
	}
	data, err := json.Marshal(list)
	s.mu.Unlock()
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, data)
}

// serveWatch streams changes as newline-separated JSON watch events. With
// sendInitialEvents=true (client-go's watch-list, on by default since 1.35) it first sends
// every matching object as ADDED and then the bookmark that ends the initial events;
// otherwise it replays the changes after the resourceVersion asked for.
func (s *apiStore) serveWatch(w http.ResponseWriter, req *http.Request, r request, query url.Values) {
	sel, err := parseSelector(query.Get("fieldSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, http.StatusInternalServerError, "InternalError", "no streaming")
		return
	}
	timeout := 30 * time.Minute
	if n, err := strconv.Atoi(query.Get("timeoutSeconds")); err == nil && n > 0 {
		timeout = time.Duration(n) * time.Second
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(kind string, o object) bool {
		if err := enc.Encode(object{"type": kind, "object": o}); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}

	s.mu.Lock()
	var pending []change
	from, _ := strconv.ParseInt(query.Get("resourceVersion"), 10, 64)
	if query.Get("sendInitialEvents") == "true" {
		keys := make([]string, 0, len(s.objects))
		for k := range s.objects {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if o := s.objects[k]; r.matches(strings.SplitN(k, "/", 2)[0], o) && sel.matches(o) {
				pending = append(pending, change{resource: r.resource, kind: "ADDED", obj: deepCopy(o)})
			}
		}
		pending = append(pending, change{kind: "BOOKMARK", obj: object{
			"apiVersion": "v1", "kind": kinds[r.resource].kind,
			"metadata": object{
				"resourceVersion": strconv.FormatInt(s.rv, 10),
				"annotations":     object{"k8s.io/initial-events-end": "true"},
			},
		}})
		from = s.rv
	} else {
		for _, c := range s.history {
			if c.rv > from && r.matches(c.resource, c.obj) && sel.matches(c.obj) {
				pending = append(pending, c)
			}
		}
		if len(s.history) > 0 {
			from = max(from, s.history[len(s.history)-1].rv)
		}
	}
	s.mu.Unlock()

	deadline := time.After(timeout)
	for {
		for _, c := range pending {
			if !send(c.kind, c.obj) {
				return
			}
		}
		pending = nil
		select {
		case <-req.Context().Done():
			return
		case <-deadline:
			return
		case <-s.waitChange():
		}
		s.mu.Lock()
		for _, c := range s.history {
			if c.rv > from && r.matches(c.resource, c.obj) && sel.matches(c.obj) {
				pending = append(pending, c)
			}
			from = max(from, c.rv)
		}
		s.mu.Unlock()
	}
}

func (s *apiStore) servePatch(w http.ResponseWriter, req *http.Request, r request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := storeKey(r.resource, r.namespace, r.name)
	current, ok := s.objects[key]
	if !ok {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", r.resource, r.name))
		return
	}
	patched := deepCopy(current)
	contentType := req.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(contentType, "application/merge-patch+json"),
		strings.HasPrefix(contentType, "application/strategic-merge-patch+json"):
		// Strategic merge differs from a merge patch only for lists with merge keys, which
		// nothing here patches (the plugin sends merge patches; Events get strategic ones
		// of counts and timestamps).
		var patch any
		if err := json.Unmarshal(body, &patch); err != nil {
			writeStatus(w, http.StatusBadRequest, "BadRequest", "patch: "+err.Error())
			return
		}
		if p, ok := patch.(map[string]any); ok {
			if want, _ := child(p, "metadata")["resourceVersion"].(string); want != "" &&
				want != child(current, "metadata")["resourceVersion"] {
				writeStatus(w, http.StatusConflict, "Conflict", fmt.Sprintf(
					"Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again",
					r.resource, r.name))
				return
			}
		}
		merged, _ := mergePatch(patched, patch).(map[string]any)
		patched = merged
	case strings.HasPrefix(contentType, "application/json-patch+json"):
		if err := jsonPatch(patched, body); err != nil {
			writeStatus(w, http.StatusUnprocessableEntity, "Invalid", err.Error())
			return
		}
	default:
		writeStatus(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "patch type "+contentType+" is not served")
		return
	}
	if patched == nil {
		writeStatus(w, http.StatusUnprocessableEntity, "Invalid", "the patch removes the object")
		return
	}
	// The object's identity is not the patch's to change.
	meta := child(patched, "metadata")
	meta["name"] = r.name
	if r.namespace == "" {
		delete(meta, "namespace")
	} else {
		meta["namespace"] = r.namespace
	}
	data, _ := json.Marshal(s.putLocked(r.resource, patched))
	writeJSON(w, http.StatusOK, data)
}

// mergePatch applies an RFC 7386 merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// jsonPatch applies the RFC 6902 operations test, add, replace and remove on object members
// (enough for the node lock release the plugin sends); arrays are not indexed.
func jsonPatch(o object, body []byte) error {
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := json.Unmarshal(body, &ops); err != nil {
		return fmt.Errorf("json patch: %w", err)
	}
	for _, op := range ops {
		steps := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		for i, s := range steps {
			steps[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
		}
		parent := o
		for _, s := range steps[:len(steps)-1] {
			next, ok := parent[s].(map[string]any)
			if !ok {
				return fmt.Errorf("json patch %s %s: no such member", op.Op, op.Path)
			}
			parent = next
		}
		last := steps[len(steps)-1]
		current, exists := parent[last]
		switch op.Op {
		case "test":
			a, _ := json.Marshal(current)
			b, _ := json.Marshal(op.Value)
			if !exists || string(a) != string(b) {
				return fmt.Errorf("json patch test %s failed", op.Path)
			}
		case "add", "replace":
			if op.Op == "replace" && !exists {
				return fmt.Errorf("json patch replace %s: no such member", op.Path)
			}
			parent[last] = op.Value
		case "remove":
			if !exists {
				return fmt.Errorf("json patch remove %s: no such member", op.Path)
			}
			delete(parent, last)
		default:
			return fmt.Errorf("json patch op %q is not served", op.Op)
		}
	}
	return nil
}

// serveWrite creates (POST) or replaces (PUT) an object. Bodies come in protobuf or JSON,
// whichever the client sends, and are decoded with client-go's scheme.
func (s *apiStore) serveWrite(w http.ResponseWriter, req *http.Request, r request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	decoded, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "decode body: "+err.Error())
		return
	}
	o, err := toObject(decoded)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	meta := child(o, "metadata")
	if kinds[r.resource].namespaced {
		meta["namespace"] = r.namespace
	}
	if name, _ := meta["name"].(string); name == "" {
		prefix, _ := meta["generateName"].(string)
		meta["name"] = prefix + strings.ReplaceAll(string(uuid.NewUUID())[:8], "-", "")
	}
	name := meta["name"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, exists := s.objects[storeKey(r.resource, r.namespace, name)]
	switch {
	case req.Method == http.MethodPost && exists:
		writeStatus(w, http.StatusConflict, "AlreadyExists", fmt.Sprintf("%s %q already exists", r.resource, name))
		return
	case req.Method == http.MethodPut && !exists:
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", r.resource, name))
		return
	}
	if r.resource == "events" {
		s.logf("fake API: Event %s %s on %v: %v", o["type"], o["reason"], o["involvedObject"], o["message"])
	}
	data, _ := json.Marshal(s.putLocked(r.resource, o))
	code := http.StatusOK
	if req.Method == http.MethodPost {
		code = http.StatusCreated
	}
	writeJSON(w, code, data)
}

func writeJSON(w http.ResponseWriter, code int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	data, _ := json.Marshal(object{
		"apiVersion": "v1", "kind": "Status", "status": "Failure",
		"message": message, "reason": reason, "code": code, "metadata": object{},
	})
	writeJSON(w, code, data)
}

// loggingHandler logs every request with its answer, so the check's output shows what the
// plugin asked of the API server.
func loggingHandler(next http.Handler, logger *log.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, req)
		logger.Printf("fake API: %s %s -> %d (%s)", req.Method, req.URL.RequestURI(), rec.code, time.Since(start).Round(time.Millisecond))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
