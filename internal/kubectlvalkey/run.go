package kubectlvalkey

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// DialFunc opens a connection; net.Dialer.DialContext fits.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ResolveFunc resolves a host name to addresses; net.Resolver.LookupHost fits.
type ResolveFunc func(ctx context.Context, host string) ([]string, error)

// Env is what a run reads and writes besides the cluster.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// Dialer opens every connection to Valkey; nil uses net.Dialer.
	Dialer DialFunc
	// Resolver resolves the Service name; nil uses the system resolver.
	Resolver ResolveFunc
	// Getenv reads the environment; nil uses os.Getenv.
	Getenv func(string) string
	// Now dates a backup's default name; nil uses time.Now.
	Now func() time.Time
	// PollInterval is how often --wait reads the object; zero is a second.
	PollInterval time.Duration
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e Env) pollInterval() time.Duration {
	if e.PollInterval <= 0 {
		return time.Second
	}
	return e.PollInterval
}

// usageError is a command line that cannot run.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps Run's error to the process exit status: 0 success, 1 a
// failed check or command, 2 a bad command line.
func ExitCode(err error) int {
	var u *usageError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	default:
		return 1
	}
}

const usage = `kubectl valkey: inspect, back up and restore Valkey clusters run by the
Valkey operator.

Usage:
  kubectl valkey status CLUSTER [-n NAMESPACE] [--kubeconfig PATH] [--context NAME]
  kubectl valkey verify-tls CLUSTER [-n NAMESPACE] [--kubeconfig PATH] [--context NAME]
      [--ca FILE] [--user NAME] [--password-file FILE] [--address HOST:PORT]
      [--cluster-domain DOMAIN] [--timeout DURATION]
  kubectl valkey backup CLUSTER --bucket BUCKET --endpoint URL --credentials SECRET
      [--prefix PREFIX] [--insecure] [--region REGION] [--ca-secret SECRET]
      [--name NAME] [--wait] [--timeout DURATION] [-n NAMESPACE ...]
  kubectl valkey restore BACKUP --into NEW_CLUSTER [--config CONFIG] [--shards N]
      [--replicas N] [--tls-secret SECRET] [--wait] [--timeout DURATION]
      [-n NAMESPACE ...]

The password of --user (or of the default user) comes from --password-file
or $KUBECTL_VALKEY_PASSWORD, never from the command line.

Run "kubectl valkey COMMAND --help" for a command's flags.
`

// Run executes one plugin invocation; args exclude the program name.
func Run(ctx context.Context, args []string, env Env) error {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return usageErrorf("no command given")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "status":
		return runStatus(ctx, rest, env)
	case "verify-tls":
		return runVerifyTLS(ctx, rest, env)
	case "backup":
		return runBackup(ctx, rest, env)
	case "restore":
		return runRestore(ctx, rest, env)
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		fmt.Fprint(env.Stderr, usage)
		return usageErrorf("unknown command %q", cmd)
	}
}

// commonFlags are the cluster-access flags every command takes.
type commonFlags struct {
	namespace  string
	kubeconfig string
	context    string
}

func (c *commonFlags) bind(fs *pflag.FlagSet) {
	fs.StringVarP(&c.namespace, "namespace", "n", "", "Namespace of the cluster (default: the kubeconfig context's).")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "Path of the kubeconfig (default: $KUBECONFIG, then ~/.kube/config).")
	fs.StringVar(&c.context, "context", "", "Kubeconfig context to use (default: the current one).")
}

// parse parses the flags and returns the one positional argument, the
// cluster name. Flags may come before or after it, as with kubectl.
func parse(fs *pflag.FlagSet, args []string) (string, error) {
	return parseNamed(fs, args, "CLUSTER")
}

// parseNamed is parse for a command whose one argument is what names.
func parseNamed(fs *pflag.FlagSet, args []string, what string) (string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return "", err
		}
		return "", usageErrorf("%s: %v", fs.Name(), err)
	}
	if fs.NArg() != 1 {
		return "", usageErrorf("%s: want exactly one %s argument, got %d", fs.Name(), what, fs.NArg())
	}
	return fs.Arg(0), nil
}

func newFlagSet(name, synopsis string, env Env) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: kubectl valkey %s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
	}
	return fs
}

func runStatus(ctx context.Context, args []string, env Env) error {
	var common commonFlags
	fs := newFlagSet("status", "status CLUSTER [flags]", env)
	common.bind(fs)
	name, err := parse(fs, args)
	if err != nil {
		return err
	}
	conn, err := connect(common)
	if err != nil {
		return err
	}
	return status(ctx, conn.client, conn.namespace, name, env.Stdout)
}

func runVerifyTLS(ctx context.Context, args []string, env Env) error {
	v, common, err := parseVerifyTLS(args, env)
	if err != nil {
		return err
	}
	conn, err := connect(common)
	if err != nil {
		return err
	}
	v.Client, v.Namespace = conn.client, conn.namespace
	return v.verify(ctx)
}

// parseVerifyTLS turns verify-tls's command line, and the environment,
// into a verifier that has yet to be given a client and namespace.
func parseVerifyTLS(args []string, env Env) (*verifier, commonFlags, error) {
	var (
		common       commonFlags
		caFile       string
		passwordFile string
		argvPassword string
		timeout      time.Duration
	)
	v := &verifier{Dialer: env.Dialer, Resolver: env.Resolver, Out: env.Stdout}
	fs := newFlagSet("verify-tls", "verify-tls CLUSTER [flags]", env)
	common.bind(fs)
	fs.StringVar(&caFile, "ca", "", "PEM file of the CA to verify against (default: ca.crt of the cluster's TLS Secret).")
	fs.StringVar(&v.User, "user", "", "ACL user to authenticate as before PING.")
	fs.StringVar(&passwordFile, "password-file", "", "File holding the password of --user (or of the default user when --user is empty); default: $"+EnvPassword+".")
	fs.StringVar(&argvPassword, "password", "", "Refused: use --password-file or $"+EnvPassword+".")
	_ = fs.MarkHidden("password")
	fs.StringVar(&v.Address, "address", "", "HOST:PORT to reach the cluster's Service at, e.g. a local port-forward; skips the per-node checks.")
	fs.StringVar(&v.ClusterDomain, "cluster-domain", defaultClusterDomain, "DNS suffix of the cluster's Service and pod names.")
	fs.DurationVar(&timeout, "timeout", defaultTimeout, "Bound on each connection and reply.")
	name, err := parse(fs, args)
	if err != nil {
		return nil, common, err
	}
	if fs.Changed("password") {
		return nil, common, errPasswordOnCommandLine
	}
	getenv := env.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v.Password, err = password(passwordFile, getenv); err != nil {
		return nil, common, err
	}
	if v.User != "" && v.Password == "" {
		return nil, common, usageErrorf("verify-tls: --user needs a password: --password-file FILE or $%s", EnvPassword)
	}
	if caFile != "" {
		if v.CA, err = readCAFile(caFile); err != nil {
			return nil, common, err
		}
	}
	v.Timeout, v.Cluster = timeout, name
	return v, common, nil
}
