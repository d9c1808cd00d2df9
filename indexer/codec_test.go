package indexer_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/informerdb/informerdb/indexer"
	"github.com/informerdb/informerdb/store"
)

func mustCodec(t *testing.T, example interface{}) store.Codec {
	t.Helper()
	c, err := indexer.NewCodec(example)
	if err != nil {
		t.Fatalf("NewCodec(%T): %v", example, err)
	}
	return c
}

type plain struct {
	Name  string            `json:"name"`
	Count int64             `json:"count"`
	Tags  map[string]string `json:"tags,omitempty"`
}

func TestCodecRoundTrip(t *testing.T) {
	fullPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p", UID: "u1", ResourceVersion: "12", Generation: 3,
			Labels:            map[string]string{"app": "web"},
			CreationTimestamp: metav1.Unix(1700000000, 0),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u0"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1",
			Containers: []corev1.Container{{
				Name: "c", Image: "img",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "ns"},
		"spec":     map[string]interface{}{"replicas": int64(1<<53 + 1), "ratio": 0.25, "list": []interface{}{int64(1), "x"}},
	}}
	pom := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", Labels: map[string]string{"a": "b"}},
	}
	for _, tc := range []struct {
		name      string
		obj       interface{}
		codecName string
		equal     func(a, b interface{}) bool
	}{
		{"pod via protobuf", fullPod, "protobuf", equality.Semantic.DeepEqual},
		{"unstructured keeps int64", u, "json", func(a, b interface{}) bool { return cmp.Equal(a, b) }},
		{"partial object metadata via json", pom, "json", equality.Semantic.DeepEqual},
		{"plain struct value via json", plain{Name: "x", Count: -3, Tags: map[string]string{"k": "v"}}, "json", func(a, b interface{}) bool { return cmp.Equal(a, b) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCodec(t, tc.obj)
			if c.Name() != tc.codecName {
				t.Errorf("codec %q; want %q", c.Name(), tc.codecName)
			}
			data, err := c.Encode(tc.obj)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := c.Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !tc.equal(tc.obj, got) {
				t.Errorf("round trip changed the object:\nwant %#v\n got %#v", tc.obj, got)
			}
		})
	}
}

func TestCodecTypes(t *testing.T) {
	for _, tc := range []struct {
		example interface{}
		want    string
	}{
		{&corev1.Pod{}, "k8s.io/api/core/v1.Pod"},
		{&unstructured.Unstructured{}, "unstructured"},
		{plain{}, "github.com/informerdb/informerdb/indexer_test.plain"},
		{&plain{}, "github.com/informerdb/informerdb/indexer_test.plain"},
	} {
		if got := mustCodec(t, tc.example).Type(); got != tc.want {
			t.Errorf("Type of the codec of %T = %q; want %q", tc.example, got, tc.want)
		}
	}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	if got := indexer.NewUnstructuredCodec(gvk).Type(); got != "unstructured:example.com/v1, Kind=Widget" {
		t.Errorf("unstructured codec Type with a GVK = %q", got)
	}
	if _, err := indexer.NewCodec(nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("NewCodec(nil): %v; want ErrInvalid", err)
	}
	if _, err := indexer.NewProtobufCodec(plain{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("NewProtobufCodec(plain): %v; want ErrInvalid", err)
	}
}

func TestCodecEncodeWrongType(t *testing.T) {
	var nilPod *corev1.Pod
	for _, tc := range []struct {
		name    string
		example interface{}
		obj     interface{}
	}{
		{"configmap into pod codec", &corev1.Pod{}, &corev1.ConfigMap{}},
		{"unstructured into pod codec", &corev1.Pod{}, &unstructured.Unstructured{}},
		{"pod into unstructured codec", &unstructured.Unstructured{}, &corev1.Pod{}},
		{"pointer into value codec", plain{}, &plain{}},
		{"value into pointer codec", &plain{}, plain{}},
		{"nil into pointer codec", &plain{}, nil},
		{"typed nil into pointer codec", &plain{}, (*plain)(nil)},
		{"string into json codec", plain{}, "x"},
		{"typed nil pod", &corev1.Pod{}, nilPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCodec(t, tc.example)
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Encode panicked: %v", r)
					}
				}()
				_, err = c.Encode(tc.obj)
			}()
			if err == nil {
				t.Errorf("Encode of %T with the codec of %T succeeded", tc.obj, tc.example)
			}
		})
	}
}

func TestCodecDecodeGarbage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		example interface{}
		data    []byte
	}{
		{"protobuf", &corev1.Pod{}, []byte{0xff, 0xff, 0xff, 0xff}},
		{"unstructured not json", &unstructured.Unstructured{}, []byte("{nope")},
		{"unstructured not an object", &unstructured.Unstructured{}, []byte("null")},
		{"unstructured array", &unstructured.Unstructured{}, []byte("[1]")},
		{"json struct", plain{}, []byte(`{"count":"x"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustCodec(t, tc.example).Decode(tc.data)
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Decode of garbage: %v; want ErrCorrupt", err)
			}
		})
	}
}

// TestProtobufAppendEncode: AppendEncode appends exactly Encode's bytes,
// keeping what dst held and reusing its room, and refuses what Encode
// refuses, leaving dst as it was.
func TestProtobufAppendEncode(t *testing.T) {
	c := mustCodec(t, &corev1.Pod{})
	enc, ok := c.(store.AppendEncoder)
	if !ok {
		t.Fatalf("the protobuf codec (%T) is not a store.AppendEncoder", c)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	want, err := c.Encode(pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range [][]byte{nil, []byte("prefix"), make([]byte, 0, 4096)} {
		got, err := enc.AppendEncode(dst, pod)
		if err != nil {
			t.Fatalf("AppendEncode after %d bytes: %v", len(dst), err)
		}
		if diff := cmp.Diff(append(append([]byte(nil), dst...), want...), got); diff != "" {
			t.Errorf("AppendEncode after %q (-want +got):\n%s", dst, diff)
		}
		if cap(dst) >= len(dst)+len(want) && &got[0] != &dst[:1][0] {
			t.Errorf("AppendEncode into a buffer with room (cap %d) allocated a new one", cap(dst))
		}
	}
	for name, obj := range map[string]interface{}{"other type": &corev1.ConfigMap{}, "typed nil": (*corev1.Pod)(nil)} {
		dst := []byte("keep")
		got, err := enc.AppendEncode(dst, obj)
		if err == nil {
			t.Errorf("%s: AppendEncode succeeded", name)
		}
		if string(got) != "keep" {
			t.Errorf("%s: AppendEncode returned %q, want dst unchanged", name, got)
		}
	}
}
