package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "ringcap.io", Version: "v1alpha1"}

	// SchemeBuilder registers the package's types; each *_types.go file adds its own
	// in an init function with SchemeBuilder.Register.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds every type of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
