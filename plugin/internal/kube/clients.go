package kube

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Clients are the API clients of one command run.
type Clients struct {
	// Dynamic reads ValkeyClusters (see the package comment for why not a typed client).
	Dynamic dynamic.Interface
	// Core reads the operator's pods to find its journal endpoint.
	Core kubernetes.Interface
	// Namespace is the namespace the flags select.
	Namespace string
	// Config is what they were built from: pods/exec opens its own streaming connection.
	Config *rest.Config
}

// NewClients builds the clients from the flags.
func (f *Flags) NewClients() (*Clients, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Dynamic: dyn, Core: core, Namespace: ns, Config: cfg}, nil
}
