package olm

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// All returns every object, lifted RBAC included when lifted is true, as
// unstructured objects in the order they can be applied: CRDs and other
// manifests, service accounts, RBAC, secrets, services, deployments, then
// webhook configurations.
func (o *Objects) All(lifted bool) ([]*unstructured.Unstructured, error) {
	var objects []runtime.Object
	for _, m := range o.Manifests {
		objects = append(objects, m)
	}
	for _, x := range o.ServiceAccounts {
		objects = append(objects, x)
	}
	for _, x := range o.ClusterRoles {
		objects = append(objects, x)
	}
	for _, x := range o.ClusterRoleBindings {
		objects = append(objects, x)
	}
	for _, x := range o.Roles {
		objects = append(objects, x)
	}
	for _, x := range o.RoleBindings {
		objects = append(objects, x)
	}
	if lifted {
		for _, x := range o.LiftedClusterRoles {
			objects = append(objects, x)
		}
		for _, x := range o.LiftedClusterRoleBindings {
			objects = append(objects, x)
		}
	}
	for _, x := range o.Secrets {
		objects = append(objects, x)
	}
	for _, x := range o.Services {
		objects = append(objects, x)
	}
	for _, x := range o.Deployments {
		objects = append(objects, x)
	}
	for _, x := range o.MutatingWebhooks {
		objects = append(objects, x)
	}
	for _, x := range o.ValidatingWebhooks {
		objects = append(objects, x)
	}
	out := make([]*unstructured.Unstructured, 0, len(objects))
	for _, obj := range objects {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			out = append(out, u.DeepCopy())
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}
