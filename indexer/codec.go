package indexer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/informerdb/informerdb/internal/typednil"
	"github.com/informerdb/informerdb/store"
)

// protoMessage is what the generated code of every k8s.io/api type provides.
// Marshalling through it skips the protobuf serializer's envelope and scheme
// lookup, and needs no TypeMeta, which informers' objects usually lack.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// NewCodec picks the codec for objects like example: protobuf for the
// generated Kubernetes types (every type client-go's scheme knows), JSON for
// unstructured objects (CRDs through the dynamic client) and for any other
// type, including plain Go structs.
func NewCodec(example interface{}) (store.Codec, error) {
	switch ex := example.(type) {
	case nil:
		return nil, fmt.Errorf("indexer: new codec: nil example object: %w", store.ErrInvalid)
	case *unstructured.Unstructured:
		return NewUnstructuredCodec(ex.GroupVersionKind()), nil
	case *metav1.PartialObjectMetadata:
		// Metadata informers deliver objects with their TypeMeta set;
		// protobuf would drop it.
		return NewJSONCodec(example)
	case protoMessage:
		return NewProtobufCodec(example)
	}
	return NewJSONCodec(example)
}

// ProtobufCodec encodes generated Kubernetes types with their own protobuf
// marshalling. Decoded objects have an empty TypeMeta, like the objects
// typed informers deliver.
type ProtobufCodec struct {
	typ reflect.Type // the struct type; objects are pointers to it
}

// NewProtobufCodec returns the protobuf codec for the type of example, which
// must be a pointer to a generated Kubernetes type such as *corev1.Pod.
func NewProtobufCodec(example interface{}) (*ProtobufCodec, error) {
	t := reflect.TypeOf(example)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("indexer: new protobuf codec: %T is not a pointer to a struct: %w", example, store.ErrInvalid)
	}
	if _, ok := example.(protoMessage); !ok {
		return nil, fmt.Errorf("indexer: new protobuf codec: %T has no generated Marshal/Unmarshal: %w", example, store.ErrInvalid)
	}
	return &ProtobufCodec{typ: t.Elem()}, nil
}

// Name implements store.Codec.
func (c *ProtobufCodec) Name() string { return "protobuf" }

// Type implements store.Codec: the Go type's import path and name.
func (c *ProtobufCodec) Type() string { return c.typ.PkgPath() + "." + c.typ.Name() }

// Encode implements store.Codec.
func (c *ProtobufCodec) Encode(obj interface{}) ([]byte, error) {
	m, err := c.message(obj)
	if err != nil {
		return nil, err
	}
	return m.Marshal()
}

// sizedMarshaler is the part of the generated code that marshals into a
// buffer of the caller's.
type sizedMarshaler interface {
	Size() int
	MarshalToSizedBuffer(dAtA []byte) (int, error)
}

// AppendEncode implements store.AppendEncoder.
func (c *ProtobufCodec) AppendEncode(dst []byte, obj interface{}) ([]byte, error) {
	m, err := c.message(obj)
	if err != nil {
		return dst, err
	}
	sm, ok := m.(sizedMarshaler)
	if !ok {
		data, err := m.Marshal()
		return append(dst, data...), err
	}
	size := sm.Size()
	out := slices.Grow(dst, size)[:len(dst)+size]
	n, err := sm.MarshalToSizedBuffer(out[len(dst):])
	if err != nil {
		return dst, err
	}
	if n != size {
		return dst, fmt.Errorf("indexer: protobuf encode %s: marshalled %d bytes, its Size said %d", c.Type(), n, size)
	}
	return out, nil
}

// message returns obj as a protobuf message of the codec's type.
func (c *ProtobufCodec) message(obj interface{}) (protoMessage, error) {
	m, ok := obj.(protoMessage)
	if !ok || reflect.TypeOf(obj).Elem() != c.typ {
		return nil, wrongType("protobuf", obj, "*"+c.Type())
	}
	if typednil.Is(obj) {
		return nil, fmt.Errorf("indexer: protobuf encode: nil *%s", c.Type())
	}
	return m, nil
}

// Decode implements store.Codec.
func (c *ProtobufCodec) Decode(data []byte) (interface{}, error) {
	obj := reflect.New(c.typ).Interface()
	if err := obj.(protoMessage).Unmarshal(data); err != nil {
		return nil, fmt.Errorf("indexer: protobuf decode %s: %w: %w", c.Type(), store.ErrCorrupt, err)
	}
	return obj, nil
}

// UnstructuredCodec encodes *unstructured.Unstructured as JSON.
type UnstructuredCodec struct {
	gvk schema.GroupVersionKind
}

// NewUnstructuredCodec returns the JSON codec for unstructured objects of gvk.
func NewUnstructuredCodec(gvk schema.GroupVersionKind) *UnstructuredCodec {
	return &UnstructuredCodec{gvk: gvk}
}

// Name implements store.Codec.
func (c *UnstructuredCodec) Name() string { return "json" }

// Type implements store.Codec.
func (c *UnstructuredCodec) Type() string {
	if c.gvk.Empty() {
		return "unstructured"
	}
	return "unstructured:" + c.gvk.String()
}

// Encode implements store.Codec.
func (c *UnstructuredCodec) Encode(obj interface{}) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, wrongType("unstructured", obj, "*unstructured.Unstructured")
	}
	return json.Marshal(u.Object)
}

// Decode implements store.Codec. Numbers decode as int64 where they are
// integral, as the dynamic client decodes them.
func (c *UnstructuredCodec) Decode(data []byte) (interface{}, error) {
	var m map[string]interface{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("indexer: json decode %s: %w: %w", c.Type(), store.ErrCorrupt, err)
	}
	if m == nil {
		return nil, fmt.Errorf("indexer: json decode %s: not an object: %w", c.Type(), store.ErrCorrupt)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// JSONCodec encodes any Go type with encoding/json: CRD Go types,
// metav1.PartialObjectMetadata (whose TypeMeta it keeps), plain structs.
type JSONCodec struct {
	typ reflect.Type
	ptr bool // objects are pointers to typ
}

// NewJSONCodec returns the JSON codec for the type of example, a value or a
// pointer; decoded objects have the same form.
func NewJSONCodec(example interface{}) (*JSONCodec, error) {
	t := reflect.TypeOf(example)
	if t == nil {
		return nil, fmt.Errorf("indexer: new json codec: nil example object: %w", store.ErrInvalid)
	}
	c := &JSONCodec{typ: t}
	if t.Kind() == reflect.Pointer {
		c.typ, c.ptr = t.Elem(), true
	}
	return c, nil
}

// Name implements store.Codec.
func (c *JSONCodec) Name() string { return "json" }

// Type implements store.Codec.
func (c *JSONCodec) Type() string {
	if c.typ.PkgPath() == "" {
		return c.typ.String()
	}
	return c.typ.PkgPath() + "." + c.typ.Name()
}

// Encode implements store.Codec.
func (c *JSONCodec) Encode(obj interface{}) ([]byte, error) {
	t := reflect.TypeOf(obj)
	if c.ptr && (t == nil || t.Kind() != reflect.Pointer || t.Elem() != c.typ) || !c.ptr && t != c.typ {
		want := c.Type()
		if c.ptr {
			want = "*" + want
		}
		return nil, wrongType("json", obj, want)
	}
	if c.ptr && typednil.Is(obj) {
		return nil, fmt.Errorf("indexer: json encode: nil *%s", c.Type())
	}
	return json.Marshal(obj)
}

// Decode implements store.Codec.
func (c *JSONCodec) Decode(data []byte) (interface{}, error) {
	p := reflect.New(c.typ)
	if err := json.Unmarshal(data, p.Interface()); err != nil {
		return nil, fmt.Errorf("indexer: json decode %s: %w: %w", c.Type(), store.ErrCorrupt, err)
	}
	if c.ptr {
		return p.Interface(), nil
	}
	return p.Elem().Interface(), nil
}

// ErrWrongType is wrapped by the error of a codec's Encode given an object of
// another type than the codec's, typically what a transform returned. The
// backends that encode objects refuse it with store.ErrInvalid, naming both
// types; memory and memdb without a file keep objects of any type.
var ErrWrongType = errors.New("object of another type than the codec's")

// wrongType is a codec's error for obj, of another type than want.
func wrongType(codec string, obj interface{}, want string) error {
	return fmt.Errorf("indexer: %s encode: %w: got %T, want %s", codec, ErrWrongType, obj, want)
}

var (
	_ store.Codec = (*ProtobufCodec)(nil)
	_ store.Codec = (*UnstructuredCodec)(nil)
	_ store.Codec = (*JSONCodec)(nil)
)
