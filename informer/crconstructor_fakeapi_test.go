package informer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// fakeAPIServer serves what a controller-runtime manager caching ConfigMaps
// needs, over HTTP: discovery of core/v1, the kube-system namespace (the
// cluster identity), lists of ConfigMaps (of one namespace or all), and
// watches that deliver nothing after their initial events and stay open
// until the client or the test ends them. It is safe for concurrent use.
type fakeAPIServer struct {
	srv  *httptest.Server
	stop chan struct{} // closed by Cleanup: open watches end

	mu      sync.Mutex // guards uid, objects and lists
	uid     string     // of the kube-system namespace
	objects []corev1.ConfigMap
	lists   int // LIST requests of ConfigMaps
}

// fakeListRV is the resourceVersion of every list the fake API server
// serves: nothing changes while an informer runs.
const fakeListRV = "100"

func newFakeAPIServer(t *testing.T, kubeSystemUID string) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{uid: kubeSystemUID, stop: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

// config is a REST config of the server.
func (f *fakeAPIServer) config() *rest.Config { return &rest.Config{Host: f.srv.URL} }

// setCluster replaces the cluster behind the server's URL: a kube-system
// namespace of another UID, and the given objects.
func (f *fakeAPIServer) setCluster(uid string, objects ...corev1.ConfigMap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uid = uid
	f.objects = objects
}

// listCount returns how many LISTs of ConfigMaps the server answered.
func (f *fakeAPIServer) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// fakeConfigMap is a ConfigMap of the fake API server.
func fakeConfigMap(ns, name, rv string) corev1.ConfigMap {
	return corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name + "-" + rv), ResourceVersion: rv},
		Data:       map[string]string{"v": rv},
	}
}

const fakeCoreV1 = `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[
{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","watch"]},
{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list","watch"]}]}`

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/api":
		writeJSON(w, http.StatusOK, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`)
	case path == "/apis":
		writeJSON(w, http.StatusOK, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	case path == "/api/v1":
		writeJSON(w, http.StatusOK, fakeCoreV1)
	case path == "/api/v1/namespaces/kube-system":
		f.mu.Lock()
		uid := f.uid
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, fmt.Sprintf(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","uid":%q,"resourceVersion":"1"}}`, uid))
	case path == "/api/v1/configmaps":
		f.serveConfigMaps(w, r, "")
	case strings.HasPrefix(path, "/api/v1/namespaces/") && strings.HasSuffix(path, "/configmaps"):
		ns := strings.TrimSuffix(strings.TrimPrefix(path, "/api/v1/namespaces/"), "/configmaps")
		f.serveConfigMaps(w, r, ns)
	default:
		writeJSON(w, http.StatusNotFound, fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, path))
	}
}

// serveConfigMaps answers a list or a watch of the ConfigMaps of ns (all
// namespaces if ""). A watch that asks for initial events gets them, and
// the bookmark that ends them; every watch then stays open.
func (f *fakeAPIServer) serveConfigMaps(w http.ResponseWriter, r *http.Request, ns string) {
	q := r.URL.Query()
	f.mu.Lock()
	var items []corev1.ConfigMap
	for _, cm := range f.objects {
		if ns == "" || cm.Namespace == ns {
			items = append(items, cm)
		}
	}
	if q.Get("watch") != "true" {
		f.lists++
	}
	f.mu.Unlock()
	if q.Get("watch") != "true" {
		list := corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: fakeListRV}, Items: items}
		if q.Get("limit") == "1" && len(items) > 1 {
			list.Items = items[:1]
			list.Continue = "more"
		}
		data, err := json.Marshal(list)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`)
			return
		}
		writeJSON(w, http.StatusOK, string(data))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	if q.Get("sendInitialEvents") == "true" {
		for i := range items {
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": &items[i]})
		}
		end := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{
			ResourceVersion: fakeListRV, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": &end})
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-f.stop:
	}
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprint(w, body)
}
