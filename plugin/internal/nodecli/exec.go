package nodecli

import (
	"context"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	// client-go's executors report upgrade failures with this package's types, not with
	// apimachinery's deprecated copy of it.
	"k8s.io/streaming/pkg/httpstream"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// Streams are an exec session's input and output.
type Streams struct {
	// Stdin is what follows the password (nil: nothing).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TTY runs the command on a terminal in the pod (stderr then comes with stdout), resized
	// as Resize says.
	TTY    bool
	Resize remotecommand.TerminalSizeQueue
}

// Exec runs commands in the pods' Valkey container.
type Exec struct {
	Config *rest.Config
	Core   kubernetes.Interface
}

// Run runs argv in the pod's Valkey container. A non-empty password is written to its stdin
// first, for valkey-cli --askpass: on a terminal once valkey-cli asks for it (earlier, the
// terminal would echo it in clear), and what valkey-cli shows of it (a mask) is not passed on.
func (e Exec) Run(ctx context.Context, namespace, pod string, argv []string, password string, s Streams) error {
	stdin, stdout := s.Stdin, s.Stdout
	var filter *promptFilter
	switch {
	case password == "":
	case s.TTY:
		filter = newPromptFilter(s.Stdout)
		stdout = filter
		stdin = &afterPrompt{ctx: ctx, asked: filter.asked, password: password + "\r", rest: s.Stdin}
	default:
		first := strings.NewReader(password + "\n")
		if s.Stdin != nil {
			stdin = io.MultiReader(first, s.Stdin)
		} else {
			stdin = first
		}
	}
	req := e.Core.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: kube.Container, Command: argv,
			Stdin: stdin != nil, Stdout: stdout != nil, Stderr: s.Stderr != nil && !s.TTY, TTY: s.TTY,
		}, scheme.ParameterCodec)
	// As kubectl exec: WebSocket first, SPDY from API servers that do not upgrade to it.
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Tty: s.TTY, TerminalSizeQueue: s.Resize}
	if !s.TTY && s.Stderr != nil {
		opts.Stderr = s.Stderr
	}
	err = ex.StreamWithContext(ctx, opts)
	if filter != nil {
		filter.flush()
	}
	return err
}
