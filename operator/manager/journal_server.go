package manager

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/operator/journal"
)

// journalDocument is what GET /journal/{namespace}/{name} returns.
type journalDocument struct {
	Cluster string           `json:"cluster"`
	Records []journal.Record `json:"records"`
}

// journalServer serves the journal read-only. It is a manager Runnable: it runs on every
// replica (a follower serves what it journaled while it led).
type journalServer struct {
	addr   string
	j      *journal.Journal
	reader client.Reader
}

func (s *journalServer) Start(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /journal/{namespace}/{name}", s.get)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

// NeedLeaderElection is false: the journal is readable from every replica.
func (s *journalServer) NeedLeaderElection() bool { return false }

func (s *journalServer) get(w http.ResponseWriter, req *http.Request) {
	ns, name := req.PathValue("namespace"), req.PathValue("name")
	var vc v1alpha1.ValkeyCluster
	key := ""
	if err := s.reader.Get(req.Context(), client.ObjectKey{Namespace: ns, Name: name}, &vc); err == nil {
		key = ns + "/" + name + "/" + string(vc.UID)
	} else {
		// A deleted cluster's journal is still readable: find the newest stream of that name.
		clusters, _ := s.j.Clusters()
		for _, c := range clusters {
			if strings.HasPrefix(c, ns+"/"+name+"/") {
				key = c
			}
		}
	}
	if key == "" {
		http.Error(w, "no journal for "+ns+"/"+name, http.StatusNotFound)
		return
	}
	recs, err := s.j.Records(key, 0)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(journalDocument{Cluster: key, Records: recs})
}
