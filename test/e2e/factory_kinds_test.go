package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informerdb/informerdb/informer"
	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/test/apiserver"
)

var kindsConfigMapGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// TestFactoryDynamicAndMetadataRestart: a Factory built with
// NewFactoryForConfig makes, over one database, a dynamic informer of the
// widgets custom resource (unstructured objects), a metadata informer of
// ConfigMaps (PartialObjectMetadata: no data) and a typed informer of
// ConfigMaps beside it, each in its own store. After a shutdown, changes
// while down (updates, deletes, a delete and re-create, creates) and a
// restart with a new factory on the same database, each informer's handler
// gets the persisted objects as initial adds and then exactly the changes,
// deletes included; the stores equal the server; and the restart makes no
// full LIST, only each informer's limit=1 probe.
//
// The bolt case sets FactoryOptions.Namespace, so the dynamic and metadata
// informers learn from discovery that widgets and ConfigMaps are namespaced
// and list one namespace (objects in another one must never show); the
// badger case leaves it empty and caches every namespace.
func TestFactoryDynamicAndMetadataRestart(t *testing.T) {
	// Each test function has its own API server, so their metrics do not mix.
	t.Parallel()
	srv := apiserver.Start(t, apiserver.Options{})
	c := srv.Client()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	apiserver.CreateCRD(t, dyn, widgetGVR, "Widget", false)
	cases := []struct {
		backend      backendCase
		oneNamespace bool // FactoryOptions.Namespace is the test's namespace
	}{
		{persistentBackends[0], true},
		{persistentBackends[1], false},
	}
	for _, tc := range cases {
		t.Run(tc.backend.name, func(t *testing.T) {
			ns := "kinds-" + tc.backend.name
			other := ns + "-other"
			factoryNS := ""
			if tc.oneNamespace {
				factoryNS = ns
			}
			createNamespace(t, c, ns)
			createNamespace(t, c, other)
			for i := range 4 {
				createWidgetIn(t, dyn, ns, fmt.Sprintf("w-%d", i))
				createConfigMap(t, c, ns, cmName(i), "a")
			}
			// Outside the factory's namespace in the bolt case.
			createWidgetIn(t, dyn, other, "decoy")
			createConfigMap(t, c, other, "decoy", "a")
			url := tc.backend.url(t.TempDir())

			kinds := []*kindsCase{
				{what: "widgets (dynamic)", store: "e2e.informerdb.io/v1/widgets/unstructured", lists: "widgets.e2e.informerdb.io",
					server: func(t *testing.T) kindsState { return serverWidgets(t, dyn, factoryNS) }},
				{what: "configmaps (metadata)", store: "core/v1/configmaps/metadata", lists: "configmaps",
					server: func(t *testing.T) kindsState { return serverConfigMaps(t, c, factoryNS, true) }},
				{what: "configmaps (typed)", store: "core/v1/configmaps", lists: "configmaps",
					server: func(t *testing.T) kindsState { return serverConfigMaps(t, c, factoryNS, false) }},
			}

			// Cold start.
			first := startKindsFactory(t, srv, url, factoryNS, kinds)
			persisted := map[string]kindsState{}
			for _, k := range kinds {
				want := k.server(t) // nothing changes until the shutdown
				persisted[k.what] = want
				if tc.oneNamespace {
					for key := range want {
						if !strings.HasPrefix(key, ns+"/") {
							t.Errorf("%s: the server listing of namespace %s holds %s", k.what, ns, key)
						}
					}
				} else if _, ok := want[other+"/decoy"]; !ok {
					t.Errorf("%s: the listing of all namespaces lacks %s/decoy", k.what, other)
				}
				got := first.of(k).rec.waitN(t, len(want))
				sortKindsEvents(got)
				if diff := cmp.Diff(kindsReplayOf(want), got); diff != "" {
					t.Errorf("%s: cold start notifications (-want +got):\n%s", k.what, diff)
				}
				if diff := cmp.Diff(want, kindsStoreState(first.of(k).inf.GetStore())); diff != "" {
					t.Errorf("%s: store after the cold start (-server +store):\n%s", k.what, diff)
				}
				if st := first.of(k).inf.Stats().Reflector; st.Relists.Cold != 1 || st.Resumes != 0 {
					t.Errorf("%s: reflector stats after the cold start %+v, want one cold list and no resume", k.what, st)
				}
			}
			first.shutdown(t)

			// While down. The changes outside the factory's namespace come
			// first, so that one wrongly delivered would be among the
			// notifications compared below, not after them.
			outsideWidgets := changeOutside(t, other,
				func() (old, cur metav1.Object) { return updateWidget(t, dyn, other, "decoy") },
				func() metav1.Object { return createWidgetIn(t, dyn, other, "decoy-2") })
			outsideConfigMaps := changeOutside(t, other,
				func() (old, cur metav1.Object) { return updateConfigMapLabels(t, c, other, "decoy") },
				func() metav1.Object { return createConfigMap(t, c, other, "decoy-2", "a") })
			if tc.oneNamespace {
				// Never seen: no notification expected.
				outsideWidgets, outsideConfigMaps = nil, nil
			}
			widgetChanges := slices.Concat(outsideWidgets, changeWidgetsWhileDown(t, dyn, ns))
			cmChanges := slices.Concat(outsideConfigMaps, changeConfigMapsWhileDown(t, c, ns))
			changes := map[string][]kindsEvent{
				kinds[0].what: typed(widgetChanges, "*unstructured.Unstructured"),
				kinds[1].what: typed(cmChanges, "*v1.PartialObjectMetadata"),
				kinds[2].what: typed(cmChanges, "*v1.ConfigMap"),
			}

			// Restart. Nothing changes from here on.
			server := map[string]kindsState{}
			for _, k := range kinds {
				server[k.what] = k.server(t)
			}
			before := srv.Metrics(t)
			second := startKindsFactory(t, srv, url, factoryNS, kinds)
			got := map[string][]kindsEvent{}
			for _, k := range kinds {
				got[k.what] = second.of(k).rec.waitN(t, len(persisted[k.what])+len(changes[k.what]))
			}
			second.waitSynced(t)
			cost := srv.Metrics(t).Sub(before)

			for _, k := range kinds {
				n := len(persisted[k.what])
				evs := got[k.what]
				sortKindsEvents(evs[:n])
				if diff := cmp.Diff(kindsReplayOf(persisted[k.what]), evs[:n]); diff != "" {
					t.Errorf("%s: replay of the persisted objects after the restart (-want +got):\n%s", k.what, diff)
				}
				if diff := cmp.Diff(changes[k.what], blankKindsDeleteRVs(evs[n:])); diff != "" {
					t.Errorf("%s: changes made while down, as delivered after the replay (-want +got):\n%s", k.what, diff)
				}
				if extra := second.of(k).rec.events()[len(evs):]; len(extra) != 0 {
					t.Errorf("%s: notifications beyond the changes: %+v", k.what, extra)
				}
				if diff := cmp.Diff(server[k.what], kindsStoreState(second.of(k).inf.GetStore())); diff != "" {
					t.Errorf("%s: store after the restart (-server +store):\n%s", k.what, diff)
				}
				st := second.of(k).inf.Stats().Reflector
				t.Logf("%s: %d persisted objects replayed, then %d changes; reflector stats %+v", k.what, n, len(changes[k.what]), st)
				if st.Resumes != 1 || st.Lists != 1 || st.WatchLists != 0 || st.Relists != (reflector.RelistStats{}) {
					t.Errorf("%s: reflector stats after the restart %+v, want one resume, one LIST (the probe), no streaming list and no relist", k.what, st)
				}
			}
			// One limit=1 probe per informer: one for widgets, two for
			// configmaps (the metadata and the typed informer).
			wantLists := map[string]int64{}
			for _, k := range kinds {
				wantLists[k.lists]++
			}
			for resource, want := range wantLists {
				if got := cost.Lists[resource]; got != want {
					t.Errorf("restart made %d LIST requests for %s, want %d (one limit=1 probe per informer); metrics delta %+v", got, resource, want, cost)
				}
			}
			t.Logf("restart cost: LISTs %v, watch events %v", cost.Lists, cost.WatchEvents)
			second.shutdown(t)
		})
	}
}

// kindsCase is one informer the test makes: what it caches, its store's
// name, its resource's key in apiserver.Metrics, and the server state it
// must hold.
type kindsCase struct {
	what   string
	store  string
	lists  string
	server func(*testing.T) kindsState
}

// kindsFactory is a started factory and the informers it made for each
// kindsCase.
type kindsFactory struct {
	f    *informer.Factory
	infs map[*kindsCase]*kindsInformer
}

type kindsInformer struct {
	inf *informer.Informer
	reg cache.ResourceEventHandlerRegistration
	rec *kindsRecorder
}

func (kf *kindsFactory) of(k *kindsCase) *kindsInformer { return kf.infs[k] }

// startKindsFactory makes a factory on url, an informer with a recording
// handler for each case, starts them and waits until they have synced.
// Cleanup shuts the factory down if the test has not.
func startKindsFactory(t *testing.T, srv *apiserver.Server, url, namespace string, kinds []*kindsCase) *kindsFactory {
	t.Helper()
	f, err := informer.NewFactoryForConfig(t.Context(), url, srv.Config(), &informer.FactoryOptions{
		Namespace: namespace,
		Informer: informer.Options{Reflector: reflector.Options{
			// The shortest catch-up watch: a resumed informer syncs on
			// the API server's pre-deadline bookmark, about 1-2s in.
			CatchUpWatchTimeout: 3 * time.Second,
			Backoff:             reflector.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		}},
	})
	if err != nil {
		t.Fatalf("NewFactoryForConfig: %v", err)
	}
	kf := &kindsFactory{f: f, infs: map[*kindsCase]*kindsInformer{}}
	t.Cleanup(func() { kf.shutdown(t) })
	for _, k := range kinds {
		var inf *informer.Informer
		switch k.store {
		case "e2e.informerdb.io/v1/widgets/unstructured":
			inf, err = f.DynamicInformerFor(t.Context(), widgetGVR)
		case "core/v1/configmaps/metadata":
			inf, err = f.MetadataInformerFor(t.Context(), kindsConfigMapGVR)
		case "core/v1/configmaps":
			inf, err = f.InformerFor(t.Context(), kindsConfigMapGVR)
		default:
			t.Fatalf("no informer for store %s", k.store)
		}
		if err != nil {
			t.Fatalf("%s: %v", k.what, err)
		}
		if got := inf.Name(); got != k.store {
			t.Errorf("%s: informer (and store) named %q, want %q", k.what, got, k.store)
		}
		ki := &kindsInformer{inf: inf, rec: &kindsRecorder{newEventLog[kindsEvent]()}}
		if ki.reg, err = inf.AddEventHandler(ki.rec); err != nil {
			t.Fatalf("%s: AddEventHandler: %v", k.what, err)
		}
		kf.infs[k] = ki
	}
	f.Start(t.Context())
	kf.waitSynced(t)
	return kf
}

// waitSynced waits until every informer and handler has synced.
func (kf *kindsFactory) waitSynced(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	for gvr, ok := range kf.f.WaitForCacheSync(ctx) {
		if !ok {
			t.Fatalf("%s did not sync within %v", gvr, waitLimit)
		}
	}
	for _, ki := range kf.infs {
		waitAllSynced(t, ki.inf, ki.reg)
	}
}

// shutdown shuts the factory down; it is idempotent.
func (kf *kindsFactory) shutdown(t *testing.T) {
	t.Helper()
	if err := kf.f.Shutdown(); err != nil {
		t.Errorf("factory shutdown: %v", err)
	}
}

// kindsEvent is one handler notification, reduced to what the test
// compares. Key is the object's namespace/name, Type its Go type.
type kindsEvent struct {
	Op      string // add, update, delete
	Key     string
	Type    string
	UID     string
	RV      string
	OldUID  string
	OldRV   string
	Initial bool // OnAdd's isInInitialList
	Tomb    bool // OnDelete got a cache.DeletedFinalStateUnknown
}

// kindsRecorder is a cache.ResourceEventHandler of any object type that
// records what it receives. It is safe for concurrent use.
type kindsRecorder struct{ eventLog[kindsEvent] }

// describe returns obj's key, Go type, UID and resourceVersion.
func describe(obj interface{}) (key, typ, uid, rv string) {
	typ = fmt.Sprintf("%T", obj)
	o, ok := obj.(metav1.Object)
	if !ok {
		return "<no metadata>", typ, "", ""
	}
	return o.GetNamespace() + "/" + o.GetName(), typ, string(o.GetUID()), o.GetResourceVersion()
}

func (r *kindsRecorder) OnAdd(obj interface{}, initial bool) {
	key, typ, uid, rv := describe(obj)
	r.record(kindsEvent{Op: "add", Key: key, Type: typ, UID: uid, RV: rv, Initial: initial})
}

func (r *kindsRecorder) OnUpdate(oldObj, newObj interface{}) {
	key, typ, uid, rv := describe(newObj)
	_, _, oldUID, oldRV := describe(oldObj)
	r.record(kindsEvent{Op: "update", Key: key, Type: typ, UID: uid, RV: rv, OldUID: oldUID, OldRV: oldRV})
}

func (r *kindsRecorder) OnDelete(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if tomb.Obj == nil {
			r.record(kindsEvent{Op: "delete", Key: tomb.Key, Type: "<nil>", Tomb: true})
			return
		}
		key, typ, uid, rv := describe(tomb.Obj)
		r.record(kindsEvent{Op: "delete", Key: key, Type: typ, UID: uid, RV: rv, Tomb: true})
		return
	}
	key, typ, uid, rv := describe(obj)
	r.record(kindsEvent{Op: "delete", Key: key, Type: typ, UID: uid, RV: rv})
}

func sortKindsEvents(evs []kindsEvent) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Key < evs[j].Key })
}

// blankKindsDeleteRVs clears the resourceVersion of watched deletions,
// which carry the deletion's resourceVersion that the client never learns.
func blankKindsDeleteRVs(evs []kindsEvent) []kindsEvent {
	out := append([]kindsEvent(nil), evs...)
	for i := range out {
		if out[i].Op == "delete" && !out[i].Tomb {
			out[i].RV = ""
		}
	}
	return out
}

// kindsObject is what the test compares of one object: its Go type, UID,
// resourceVersion, labels, and content (a widget's spec, a typed
// ConfigMap's data; nothing for metadata, which has none).
type kindsObject struct {
	Type    string
	UID     string
	RV      string
	Labels  map[string]string
	Content string
}

// kindsState is a set of objects by namespace/name.
type kindsState map[string]kindsObject

// kindsReplayOf is what a restarted informer's handler gets first:
// OnAdd(obj, true) for every persisted object, sorted by key.
func kindsReplayOf(st kindsState) []kindsEvent {
	var out []kindsEvent
	for key, o := range st {
		out = append(out, kindsEvent{Op: "add", Key: key, Type: o.Type, UID: o.UID, RV: o.RV, Initial: true})
	}
	sortKindsEvents(out)
	return out
}

func specOf(t testing.TB, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := json.Marshal(u.Object["spec"])
	if err != nil {
		t.Fatalf("marshal the spec of %s: %v", u.GetName(), err)
	}
	return string(b)
}

// kindsStoreState is what an informer's store holds.
func kindsStoreState(s cache.Store) kindsState {
	out := kindsState{}
	for _, obj := range s.List() {
		key, typ, uid, rv := describe(obj)
		o := kindsObject{Type: typ, UID: uid, RV: rv}
		switch obj := obj.(type) {
		case *unstructured.Unstructured:
			o.Labels = obj.GetLabels()
			b, err := json.Marshal(obj.Object["spec"])
			if err != nil {
				o.Content = fmt.Sprintf("<%v>", err)
			} else {
				o.Content = string(b)
			}
		case *corev1.ConfigMap:
			o.Labels, o.Content = obj.Labels, obj.Data["data"]
		case *metav1.PartialObjectMetadata:
			// Only metadata: the Go type has no room for data.
			o.Labels = obj.Labels
		}
		out[key] = o
	}
	return out
}

// serverWidgets lists the widgets of ns ("" for all) from the API server.
func serverWidgets(t *testing.T, dyn dynamic.Interface, ns string) kindsState {
	t.Helper()
	list, err := dyn.Resource(widgetGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list widgets in %q: %v", ns, err)
	}
	out := kindsState{}
	for i := range list.Items {
		u := &list.Items[i]
		out[u.GetNamespace()+"/"+u.GetName()] = kindsObject{
			Type: "*unstructured.Unstructured", UID: string(u.GetUID()), RV: u.GetResourceVersion(),
			Labels: u.GetLabels(), Content: specOf(t, u),
		}
	}
	return out
}

// serverConfigMaps lists the ConfigMaps of ns ("" for all) from the API
// server, as a typed informer holds them, or as a metadata informer does.
func serverConfigMaps(t *testing.T, c kubernetes.Interface, ns string, metadataOnly bool) kindsState {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps in %q: %v", ns, err)
	}
	out := kindsState{}
	for _, cm := range list.Items {
		o := kindsObject{Type: "*v1.ConfigMap", UID: string(cm.UID), RV: cm.ResourceVersion, Labels: cm.Labels, Content: cm.Data["data"]}
		if metadataOnly {
			o.Type, o.Content = "*v1.PartialObjectMetadata", ""
		}
		out[cm.Namespace+"/"+cm.Name] = o
	}
	return out
}

func createWidgetIn(t *testing.T, dyn dynamic.Interface, ns, name string) *unstructured.Unstructured {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "e2e.informerdb.io/v1",
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": name, "namespace": ns},
		"spec":       map[string]interface{}{"size": int64(len(name))},
	}}
	cur, err := dyn.Resource(widgetGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget %s/%s: %v", ns, name, err)
	}
	return cur
}

// updateWidget changes a widget's labels and spec.
func updateWidget(t *testing.T, dyn dynamic.Interface, ns, name string) (old, cur *unstructured.Unstructured) {
	t.Helper()
	ri := dyn.Resource(widgetGVR).Namespace(ns)
	old, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get widget %s/%s: %v", ns, name, err)
	}
	upd := old.DeepCopy()
	upd.SetLabels(map[string]string{"rev": "2"})
	if err := unstructured.SetNestedField(upd.Object, int64(99), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if cur, err = ri.Update(t.Context(), upd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update widget %s/%s: %v", ns, name, err)
	}
	return old, cur
}

func deleteWidget(t *testing.T, dyn dynamic.Interface, ns, name string) *unstructured.Unstructured {
	t.Helper()
	ri := dyn.Resource(widgetGVR).Namespace(ns)
	old, err := ri.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get widget %s/%s: %v", ns, name, err)
	}
	uid := old.GetUID()
	if err := ri.Delete(t.Context(), name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("delete widget %s/%s: %v", ns, name, err)
	}
	return old
}

// updateConfigMapLabels changes a ConfigMap's labels and data.
func updateConfigMapLabels(t *testing.T, c kubernetes.Interface, ns, name string) (old, cur *corev1.ConfigMap) {
	t.Helper()
	old, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap %s/%s: %v", ns, name, err)
	}
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"app": "a", "rev": "2"}
	upd.Data["data"] = "v2"
	if cur, err = c.CoreV1().ConfigMaps(ns).Update(t.Context(), upd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update configmap %s/%s: %v", ns, name, err)
	}
	return old, cur
}

// changeWidgetsWhileDown updates w-0, deletes w-1, deletes and re-creates
// w-2, and creates w-new in ns. It returns the notifications a resumed
// informer must deliver, in order, without their Type, and with the
// resourceVersions of deletions blank.
func changeWidgetsWhileDown(t *testing.T, dyn dynamic.Interface, ns string) []kindsEvent {
	t.Helper()
	key := func(name string) string { return ns + "/" + name }
	old, cur := updateWidget(t, dyn, ns, "w-0")
	want := []kindsEvent{{Op: "update", Key: key("w-0"), UID: string(cur.GetUID()), RV: cur.GetResourceVersion(), OldUID: string(old.GetUID()), OldRV: old.GetResourceVersion()}}
	old = deleteWidget(t, dyn, ns, "w-1")
	want = append(want, kindsEvent{Op: "delete", Key: key("w-1"), UID: string(old.GetUID())})
	old = deleteWidget(t, dyn, ns, "w-2")
	cur = createWidgetIn(t, dyn, ns, "w-2")
	want = append(want,
		kindsEvent{Op: "delete", Key: key("w-2"), UID: string(old.GetUID())},
		kindsEvent{Op: "add", Key: key("w-2"), UID: string(cur.GetUID()), RV: cur.GetResourceVersion()})
	cur = createWidgetIn(t, dyn, ns, "w-new")
	return append(want, kindsEvent{Op: "add", Key: key("w-new"), UID: string(cur.GetUID()), RV: cur.GetResourceVersion()})
}

// changeConfigMapsWhileDown is changeWidgetsWhileDown for the ConfigMaps
// cm-00000... of ns.
func changeConfigMapsWhileDown(t *testing.T, c kubernetes.Interface, ns string) []kindsEvent {
	t.Helper()
	key := func(name string) string { return ns + "/" + name }
	old, cur := updateConfigMapLabels(t, c, ns, cmName(0))
	want := []kindsEvent{{Op: "update", Key: key(cur.Name), UID: string(cur.UID), RV: cur.ResourceVersion, OldUID: string(old.UID), OldRV: old.ResourceVersion}}
	old = deleteConfigMap(t, c, ns, cmName(1))
	want = append(want, kindsEvent{Op: "delete", Key: key(old.Name), UID: string(old.UID)})
	old = deleteConfigMap(t, c, ns, cmName(2))
	cur = createConfigMap(t, c, ns, cmName(2), "recreated")
	want = append(want,
		kindsEvent{Op: "delete", Key: key(old.Name), UID: string(old.UID)},
		kindsEvent{Op: "add", Key: key(cur.Name), UID: string(cur.UID), RV: cur.ResourceVersion})
	cur = createConfigMap(t, c, ns, "new-00000", "a")
	return append(want, kindsEvent{Op: "add", Key: key(cur.Name), UID: string(cur.UID), RV: cur.ResourceVersion})
}

// typed returns evs with Type set to typ.
func typed(evs []kindsEvent, typ string) []kindsEvent {
	out := append([]kindsEvent(nil), evs...)
	for i := range out {
		out[i].Type = typ
	}
	return out
}

// changeOutside updates one object and creates another in ns, outside the
// factory's namespace in the bolt case, and returns the notifications an
// informer of every namespace must deliver for them.
func changeOutside(t *testing.T, ns string, update func() (old, cur metav1.Object), create func() metav1.Object) []kindsEvent {
	t.Helper()
	old, cur := update()
	created := create()
	return []kindsEvent{
		{Op: "update", Key: ns + "/" + cur.GetName(), UID: string(cur.GetUID()), RV: cur.GetResourceVersion(), OldUID: string(old.GetUID()), OldRV: old.GetResourceVersion()},
		{Op: "add", Key: ns + "/" + created.GetName(), UID: string(created.GetUID()), RV: created.GetResourceVersion()},
	}
}
