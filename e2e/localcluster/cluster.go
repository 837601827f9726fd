package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/netfault"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/provisioner"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster/serviceproxy"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// ErrNotRoot is returned by Start when the process is not root: Pods need mount namespaces
// and partitions need nftables.
var ErrNotRoot = errors.New("the local cluster needs root (mount namespaces for pods, nftables for partitions): run the tests as root, e.g. sudo make test")

// Cluster is a running local cluster. Stop removes every process, nftables table and
// directory it made.
type Cluster struct {
	opts Options
	slot slot
	cp   *controlPlane
	cs   kubernetes.Interface
	ipam *ipam
	pnet *clusterNet // the Pods' bridge and network namespaces (podnet.go)
	cg   *cgroupRoot
	mem  *memoryCgroups // nil when the machine offers no memory controller

	agent   *agent
	net     *netfault.Table
	np      *netPolicy // nil when nft is missing
	apiHost string
	apiPort string

	ctx      context.Context
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

// Start brings up a local cluster: control plane, Nodes, node agent, service proxy and
// storage provisioner. It returns once the Nodes are Ready, the StorageClass exists and every
// namespace has the controller-manager's default ServiceAccount and root CA ConfigMap.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	binDir, err := kubeassets.Dir()
	if err != nil {
		return nil, err
	}
	_ = netfault.SweepStale()
	s, err := claimSlot()
	if err != nil {
		return nil, err
	}
	cl := &Cluster{opts: opts, slot: s, ipam: newIPAM(s.podPrefix())}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			_ = cl.Stop()
		}
	}()
	if cl.pnet, err = newClusterNet(s); err != nil {
		return nil, err
	}
	if cl.cg, err = newCgroupRoot(s); err != nil {
		return nil, err
	}
	if cl.mem = newMemoryCgroups(cl.cg); cl.mem == nil {
		fmt.Fprintf(opts.Log, "[node-agent] %v\n", ErrNoMemoryController)
	}
	cl.cp, err = startControlPlane(ctx, binDir, s, opts.Log)
	if err != nil {
		return nil, err
	}
	cl.apiHost, cl.apiPort = cl.cp.apiServerHostPort()
	cl.cs, err = kubernetes.NewForConfig(cl.cp.restConfig())
	if err != nil {
		return nil, err
	}
	cl.net, err = netfault.New(fmt.Sprintf("lc%d", s.n))
	if err != nil && !errors.Is(err, netfault.ErrNotRoot) && !errors.Is(err, netfault.ErrNoNft) {
		return nil, err
	}
	cl.agent = &agent{cl: cl, nodes: map[string]*node{}, runners: map[types.UID]*podRunner{}, newIPs: opts.NewIPOnRecreate}
	for i := 0; i < opts.Nodes; i++ {
		n := &node{name: fmt.Sprintf("node-%d", i), zone: opts.Zones[i%len(opts.Zones)], ip: s.nodeIP(i), maxPods: opts.MaxPodsPerNode}
		if err := cl.serveKubelet(n); err != nil {
			return nil, err
		}
		if err := registerNode(ctx, cl.cs, n); err != nil {
			return nil, err
		}
		cl.agent.nodes[n.name] = n
		cl.goBackground(func() { heartbeat(cl.ctx, cl.cs, n) })
	}
	factory := informers.NewSharedInformerFactory(cl.cs, 0)
	if err := cl.agent.start(factory); err != nil {
		return nil, err
	}
	if cl.np, err = startNetPolicy(cl, factory); err != nil {
		return nil, err
	}
	factory.Start(cl.ctx.Done())
	prov := provisioner.New(cl.cs, provisioner.Options{Root: filepath.Join(s.dir, "volumes"), Capacity: opts.VolumeCapacity, Logger: logger(opts.Log, "provisioner")})
	if err := prov.EnsureStorageClass(ctx); err != nil {
		return nil, err
	}
	cl.goBackground(func() { _ = prov.Run(cl.ctx) })
	proxy := serviceproxy.New(cl.cs, serviceproxy.Options{
		Logger: logger(opts.Log, "service-proxy"),
		Static: map[string]string{"default/kubernetes": cl.apiHost + ":" + cl.apiPort},
		// A Pod would answer 127.0.0.1 or a Pod's address itself (podnet.go), so those
		// clients reach a backend from the host's address; other host addresses (an
		// operator in the test process binding its own) are kept.
		KeepSource: func(a netip.Addr) bool {
			return a != netip.AddrFrom4([4]byte{127, 0, 0, 1}) && (!s.podPrefix().Contains(a) || s.nodePrefix().Contains(a))
		},
	})
	cl.goBackground(func() { _ = proxy.Run(cl.ctx) })
	if err := cl.waitNamespacesSettled(ctx); err != nil {
		return nil, err
	}
	return cl, nil
}

// waitNamespacesSettled waits until kube-controller-manager has given every namespace that
// exists at start its default ServiceAccount and its kube-root-ca.crt ConfigMap. Pods are
// refused until the ServiceAccount exists, and a test that takes an inventory of the API's
// objects (the install paths' "nothing left behind") must not find the control plane's own
// objects appearing under it, as they would on a cluster that has just come up.
func (c *Cluster) waitNamespacesSettled(ctx context.Context) error {
	var missing string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		nss, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil || len(nss.Items) == 0 {
			missing = "the namespace list"
			return false, nil
		}
		for _, ns := range nss.Items {
			if _, err := c.cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{}); err != nil {
				missing = "ServiceAccount " + ns.Name + "/default"
				return false, nil
			}
			if _, err := c.cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
				missing = "ConfigMap " + ns.Name + "/kube-root-ca.crt"
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s (is kube-controller-manager running? see the log): %w", missing, err)
	}
	return nil
}

func (c *Cluster) goBackground(f func()) {
	c.bg.Add(1)
	go func() { defer c.bg.Done(); f() }()
}

// Stop ends every Pod's processes, the agent, the proxy, the control plane, deletes the
// nftables table and removes the cluster's directory. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.agent != nil {
			c.agent.stopAll()
		}
		if c.cancel != nil {
			c.cancel()
		}
		c.bg.Wait()
		if c.net != nil {
			c.stopErr = errors.Join(c.stopErr, c.net.Close())
		}
		if c.np != nil {
			c.stopErr = errors.Join(c.stopErr, c.np.close())
		}
		if c.cp != nil {
			c.cp.stop()
		}
		// Anything still marked with this cluster's directory (a container that ignored
		// every signal, a probe) goes before the directory does.
		if c.cg != nil {
			c.cg.removeAll()
		}
		if c.mem != nil {
			c.mem.removeAll()
		}
		killProcessesUnder(c.slot.dir)
		if c.pnet != nil {
			c.pnet.close()
		}
		c.slot.release()
	})
	return c.stopErr
}

// Log returns a writer into the cluster's log whose lines carry the given prefix, for
// components a test runs beside the cluster (an operator in the test process).
func (c *Cluster) Log(prefix string) io.Writer { return prefixed(c.opts.Log, prefix) }

// RESTConfig is an admin (system:masters) client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return c.cp.restConfig() }

// Clientset is an admin client.
func (c *Cluster) Clientset() kubernetes.Interface { return c.cs }

// EtcdURL is etcd's client URL (plain HTTP on loopback): tests that must see what the API
// server stored, not what it answers, read it there.
func (c *Cluster) EtcdURL() string { return c.cp.plane.Etcd.URL.String() }

// KubeconfigPath is an admin kubeconfig file for kubectl.
func (c *Cluster) KubeconfigPath() string { return c.cp.kubecfg }

// Dir is the cluster's directory; Stop removes it.
func (c *Cluster) Dir() string { return c.slot.dir }

// APIServer is the API server's host and port, as Pods see it (KUBERNETES_SERVICE_HOST/PORT).
func (c *Cluster) APIServer() (host, port string) { return c.apiHost, c.apiPort }

// HostIP is the host's address on the Pods' network: what the test process, an operator
// running in it and the service proxy connect to Pods from, unless they bind another
// loopback address (127.0.0.1 is not one: inside a Pod it is the Pod's own).
func (c *Cluster) HostIP() netip.Addr { return c.slot.hostIP() }

// NodeNames lists the Nodes the agent runs.
func (c *Cluster) NodeNames() []string {
	out := make([]string, 0, len(c.agent.nodes))
	for i := 0; i < len(c.agent.nodes); i++ {
		out = append(out, fmt.Sprintf("node-%d", i))
	}
	return out
}

// PodIP is the loopback address the agent gave a running Pod.
func (c *Cluster) PodIP(namespace, name string) (netip.Addr, error) {
	r, err := c.agent.runner(namespace, name)
	if err != nil {
		return netip.Addr{}, err
	}
	return r.ip, nil
}

// Exec runs a command inside a running container (its namespaces, root, working directory
// and environment) and returns its combined output.
func (c *Cluster) Exec(ctx context.Context, namespace, pod, container string, command ...string) ([]byte, error) {
	r, ct, err := c.container(namespace, pod, container)
	if err != nil {
		return nil, err
	}
	return r.execIn(ctx, ct, command)
}

// LogPath is the file that collects a container's output across its restarts.
func (c *Cluster) LogPath(namespace, pod, container string) (string, error) {
	r, _, err := c.container(namespace, pod, container)
	if err != nil {
		return "", err
	}
	return r.logPath(container), nil
}

func (c *Cluster) container(namespace, pod, name string) (*podRunner, *container, error) {
	r, err := c.agent.runner(namespace, pod)
	if err != nil {
		return nil, nil, err
	}
	all := append(append([]*container{}, r.containers...), r.inits...)
	for _, ct := range all {
		if name == "" || ct.spec.Name == name {
			return r, ct, nil
		}
	}
	return nil, nil, fmt.Errorf("pod %s/%s has no container %q", namespace, pod, name)
}

// WaitPodReady waits until the Pod exists and its Ready condition is True.
func (c *Cluster) WaitPodReady(ctx context.Context, namespace, name string, timeout time.Duration) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		return conditionTrue(p.Status.Conditions, corev1.PodReady), nil
	})
	if err != nil {
		return pod, fmt.Errorf("pod %s/%s not ready after %s: %w", namespace, name, timeout, err)
	}
	return pod, nil
}

// ContainerPID is the host PID of a running container's main process (for resource
// measurements; faults have their own methods).
func (c *Cluster) ContainerPID(namespace, pod, container string) (int, error) {
	_, ct, err := c.container(namespace, pod, container)
	if err != nil {
		return 0, err
	}
	if pid := ct.pid(); pid != 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("container %s of %s/%s is not running", container, namespace, pod)
}
