// Package typednil tells nil values apart in an interface: the nil
// interface, and the typed nils (a nil *Pod, map, slice, ...) on which key
// functions, index functions and transforms written for real objects
// panic. Every package that hands user callbacks an object checks with it
// first, so that such input is an error rather than a panic.
package typednil

import "reflect"

// Is reports whether v is nil or a typed nil pointer, map, slice, channel,
// function or interface. A struct (a clientset wrapper passed by value) is
// not nil.
func Is(v interface{}) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
