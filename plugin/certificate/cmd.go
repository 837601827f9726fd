package certificate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// NewCmd is the certificate verb. now is the clock expiry is shown against.
func NewCmd(flags *kube.Flags, now func() time.Time) *cobra.Command {
	format := output.Text
	cmd := &cobra.Command{
		Use:   "certificate NAME",
		Short: "Show the certificate each pod serves and whether it is the TLS Secret's",
		Long: `Show the serving certificate of each pod of a ValkeyCluster as the operator saw it over a
fresh TLS handshake (subject, DNS names, serial, expiry, issuer), the certificate in the
cluster's TLS Secret (spec.tls.secretRef), and whether each pod serves the Secret's. A renewed
certificate is loaded by the nodes without a restart; a pod that still serves the old one is
being reloaded (kubectl valkey history shows certificate-reloaded once all serve it).
-o json or -o yaml prints the same as a structure: mode, secretName and status.tls as the
operator wrote it.`,
		Example: `  kubectl valkey certificate cache
  kubectl valkey certificate cache -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: flags.CompleteClusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			clients, err := flags.NewClients()
			if err != nil {
				return err
			}
			u, err := kube.GetCluster(cmd.Context(), clients.Dynamic, clients.Namespace, args[0])
			if err != nil {
				return err
			}
			vc, err := kube.Typed(u)
			if err != nil {
				return err
			}
			if format != output.Text {
				return output.Encode(cmd.OutOrStdout(), ViewOf(vc), format)
			}
			return Print(cmd.OutOrStdout(), vc, now())
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	return cmd
}

// View is what certificate -o json or -o yaml prints.
type View struct {
	// Mode is spec.tls.mode, Disabled when unset.
	Mode v1beta1.TLSMode `json:"mode"`
	// SecretName is the TLS Secret the cluster's certificate is read from; empty without TLS.
	SecretName string `json:"secretName,omitempty"`
	// TLS is status.tls: the Secret's certificate and what each pod serves, absent when no
	// pod presents one.
	TLS *v1beta1.TLSStatus `json:"tls,omitempty"`
}

// ViewOf is vc's certificates as a View.
func ViewOf(vc *v1beta1.ValkeyCluster) View {
	v := View{Mode: vc.Spec.TLS.Mode, TLS: vc.Status.TLS}
	if v.Mode == "" {
		v.Mode = v1beta1.TLSDisabled
	}
	if v.Mode != v1beta1.TLSDisabled || v.TLS != nil {
		v.SecretName = v1beta1.TLSSecretName(vc)
	}
	return v
}

// Print writes the certificates of vc's status.
func Print(w io.Writer, vc *v1beta1.ValkeyCluster, now time.Time) error {
	st := vc.Status.TLS
	mode := vc.Spec.TLS.Mode
	if mode == "" {
		mode = v1beta1.TLSDisabled
	}
	if st == nil {
		_, err := fmt.Fprintf(w, "%s serves no TLS (spec.tls.mode %s) and no pod presents a certificate\n", vc.Name, mode)
		return err
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "TLS mode:  %s\n", mode)
	if s := st.Secret; s != nil {
		fmt.Fprintf(b, "Secret:    %s  serial %s  expires %s  issuer %s\n", v1beta1.TLSSecretName(vc), s.Serial, expiry(s.NotAfter, now), s.Issuer)
		fmt.Fprintf(b, "           subject %s  DNS %s\n", s.Subject, strings.Join(s.DNSNames, ", "))
	}
	if c := st.Certificate; c != nil {
		fmt.Fprintf(b, "Issued by: cert-manager Certificate %s  Ready %s", c.Name, c.Ready)
		if c.Message != "" {
			fmt.Fprintf(b, "  (%s)", c.Message)
		}
		b.WriteString("\n")
	}
	if st.Refused != "" {
		fmt.Fprintf(b, "REFUSED:   %s (the nodes keep what they serve)\n", st.Refused)
	}
	if _, err := io.WriteString(w, b.String()+"\n"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tSERIAL\tEXPIRES\tMATCHES SECRET\tSUBJECT\tISSUER\tDNS NAMES")
	for _, n := range st.Nodes {
		if n.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\tunknown\t%s\t\t\n", n.Pod, "handshake failed: "+n.Error)
			continue
		}
		match := "no"
		if n.MatchesSecret {
			match = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Pod, n.Serial, expiry(n.NotAfter, now), match, n.Subject, n.Issuer, strings.Join(n.DNSNames, ","))
	}
	return tw.Flush()
}

// expiry is a certificate's end of validity, with how long is left or that it passed.
func expiry(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	at := t.UTC().Format(time.RFC3339)
	left := t.Sub(now)
	if left <= 0 {
		return at + " (EXPIRED)"
	}
	if left < 48*time.Hour {
		return fmt.Sprintf("%s (in %s)", at, left.Round(time.Minute))
	}
	return fmt.Sprintf("%s (in %dd)", at, int(left.Hours()/24))
}
