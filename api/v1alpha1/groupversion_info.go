package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "ringcap.io", Version: "v1alpha1"}

	// SchemeBuilder collects the package's types; each *_types.go file adds its own in
	// an init function: SchemeBuilder.Register(&Kind{}, &KindList{}).
	SchemeBuilder = &Builder{}

	// AddToScheme adds every type of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Builder collects API types for a scheme. It is controller-runtime's scheme.Builder
// without the dependency: API packages import only apimachinery.
//
// +kubebuilder:object:generate=false
type Builder struct {
	objects []runtime.Object
}

// Register adds types to the builder.
func (b *Builder) Register(objects ...runtime.Object) {
	b.objects = append(b.objects, objects...)
}

// AddToScheme adds the registered types, in GroupVersion, to s.
func (b *Builder) AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, b.objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
