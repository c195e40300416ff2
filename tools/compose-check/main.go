// compose-check loads a Compose file the way `docker compose config` does (the same
// compose-go loader: interpolation from the environment and an env file, the Compose
// Specification's JSON schema, normalization), and prints the resolved model as YAML, or
// the error and exit status 1. Usage: compose-check [-env-file F] [-profile P]... FILE...
// (later files override earlier ones, as with docker compose -f A -f B).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

type profiles []string

func (p *profiles) String() string     { return strings.Join(*p, ",") }
func (p *profiles) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	envFile := flag.String("env-file", "", "a .env file to interpolate from")
	var active profiles
	flag.Var(&active, "profile", "a profile to enable (repeatable)")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: compose-check [-env-file F] [-profile P]... FILE...")
		os.Exit(2)
	}
	options := []cli.ProjectOptionsFn{cli.WithOsEnv, cli.WithProfiles(active), cli.WithName("gridweave")}
	if *envFile != "" {
		options = append(options, cli.WithEnvFiles(*envFile), cli.WithDotEnv)
	}
	projectOptions, err := cli.NewProjectOptions(flag.Args(), options...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := projectOptions.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := project.MarshalYAML()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
