package typednil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestIs(t *testing.T) {
	var (
		pod   *corev1.Pod
		m     map[string]int
		s     []int
		fn    func()
		ch    chan int
		iface interface{ String() string }
	)
	for _, tc := range []struct {
		name string
		v    interface{}
		want bool
	}{
		{"nil", nil, true},
		{"nil pointer", pod, true},
		{"nil map", m, true},
		{"nil slice", s, true},
		{"nil func", fn, true},
		{"nil chan", ch, true},
		{"nil interface value", iface, true},
		{"pointer", &corev1.Pod{}, false},
		{"struct by value", corev1.Pod{}, false},
		{"empty map", map[string]int{}, false},
		{"string", "", false},
		{"int", 0, false},
	} {
		if got := Is(tc.v); got != tc.want {
			t.Errorf("Is(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
