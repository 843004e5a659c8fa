// Package apiserver runs a throwaway kube-apiserver and etcd (envtest, the
// binaries of bin/k8s) for the bundle validator's CRD check.
package apiserver

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Server is a running envtest control plane. It implements
// validate.APIServer.
type Server struct {
	env    *envtest.Environment
	config *rest.Config
	client dynamic.Interface
	// conversion is where a CRD's conversion webhook is served (OLM points
	// it at the operator's Service); nil keeps the CRD's own.
	conversion *apiextensionsv1.WebhookClientConfig
	// stopConversion stops the conversion webhook Start serves.
	stopConversion func() error
	// plural maps an installed CRD's group and kind to its resource.
	plural map[schema.GroupKind]schema.GroupVersionResource
	// namespaced records which installed kinds are namespaced.
	namespaced map[schema.GroupKind]bool
}

// Start starts kube-apiserver and etcd from assetsDir (KUBEBUILDER_ASSETS),
// and serves the SidecarSet conversion webhook, as the operator would.
func Start(assetsDir string) (*Server, error) {
	env := &envtest.Environment{BinaryAssetsDirectory: assetsDir}
	cfg, err := env.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s (make envtest builds them): %w", assetsDir, err), env.Stop())
	}
	stop, err := ServeConversion(env.WebhookInstallOptions)
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	s, err := New(cfg, ConversionClientConfig(env.WebhookInstallOptions))
	if err != nil {
		return nil, errors.Join(err, stop(), env.Stop())
	}
	s.env, s.stopConversion = env, stop
	return s, nil
}

// New uses an API server that is already running (Stop does nothing). A
// non-nil conversion is where the CRDs' conversion webhooks are served: an
// installed CRD with a conversion webhook points there, as OLM points it at
// the operator.
func New(cfg *rest.Config, conversion *apiextensionsv1.WebhookClientConfig) (*Server, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Server{config: cfg, client: client, conversion: conversion,
		plural: map[schema.GroupKind]schema.GroupVersionResource{}, namespaced: map[schema.GroupKind]bool{}}, nil
}

// Config is an admin client configuration of the server.
func (s *Server) Config() *rest.Config { return s.config }

// Stop stops the control plane if Start started it.
func (s *Server) Stop() error {
	if s.env == nil {
		return nil
	}
	var err error
	if s.stopConversion != nil {
		err = s.stopConversion()
	}
	return errors.Join(err, s.env.Stop())
}

// InstallCRD creates the CRD and waits until it is established.
func (s *Server) InstallCRD(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	crd = crd.DeepCopy()
	if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && s.conversion != nil {
		c.Webhook.ClientConfig = s.conversion.DeepCopy()
	}
	if _, err := envtest.InstallCRDs(s.config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		return err
	}
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			s.plural[gk] = schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		}
	}
	s.namespaced[gk] = crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	return nil
}

// DryRunCreate creates an object of an installed CRD with dryRun=All (in
// the default namespace if the kind is namespaced).
func (s *Server) DryRunCreate(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	gvr, ok := s.plural[gvk.GroupKind()]
	if !ok {
		return fmt.Errorf("%s is not an installed CRD's kind", gvk.GroupKind())
	}
	gvr.Version = gvk.Version
	var ri dynamic.ResourceInterface = s.client.Resource(gvr)
	if s.namespaced[gvk.GroupKind()] {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		ri = s.client.Resource(gvr).Namespace(ns)
	}
	_, err := ri.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}
