package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var spec Spec
	var tags, envs, labels, links multiFlag
	var entry, cmd string
	fs.Var(&tags, "t", "image reference, e.g. ringcap/plugin:dev (repeatable, at least one)")
	fs.StringVar(&spec.Output, "o", "", "output docker-archive tarball (required)")
	fs.StringVar(&entry, "entrypoint", "", `entrypoint: a JSON array ("[\"/a\",\"b\"]") or space-separated words`)
	fs.StringVar(&cmd, "cmd", "", "default arguments, same syntax as -entrypoint")
	fs.StringVar(&spec.WorkingDir, "workdir", "/", "working directory")
	fs.StringVar(&spec.User, "user", "", "user[:group], e.g. 65532:65532")
	fs.Var(&envs, "env", "KEY=VALUE (repeatable)")
	fs.Var(&labels, "label", "KEY=VALUE (repeatable)")
	fs.Var(&links, "symlink", "LINK=TARGET symbolic link to add (repeatable)")
	fs.IntVar(&spec.GzipLevel, "gzip-level", 1, "gzip level of the layer, 0 (stored: fastest to import) to 9")
	if err := fs.Parse(args); err != nil {
		return err
	}
	spec.Tags = tags
	spec.Env = envs
	var err error
	if spec.Entrypoint, err = words(entry); err != nil {
		return fmt.Errorf("parse -entrypoint: %w", err)
	}
	if spec.Cmd, err = words(cmd); err != nil {
		return fmt.Errorf("parse -cmd: %w", err)
	}
	spec.Labels = map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf("label %q is not KEY=VALUE", l)
		}
		spec.Labels[k] = v
	}
	for _, l := range links {
		link, target, ok := strings.Cut(l, "=")
		if !ok || link == "" || target == "" {
			return fmt.Errorf("symlink %q is not LINK=TARGET", l)
		}
		spec.Symlinks = append(spec.Symlinks, Symlink{Link: link, Target: target})
	}
	for _, a := range fs.Args() {
		i := strings.LastIndex(a, ":")
		if i <= 0 || i == len(a)-1 {
			return fmt.Errorf("argument %q is not SRC:DEST", a)
		}
		spec.Files = append(spec.Files, Copy{Src: a[:i], Dest: a[i+1:]})
	}
	if len(spec.Files) == 0 && len(spec.Symlinks) == 0 {
		return errors.New("nothing to put in the image: give SRC:DEST arguments")
	}
	digest, err := Build(spec)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s) %s\n", spec.Output, strings.Join(spec.Tags, ", "), digest)
	return nil
}

// words parses a JSON string array or space-separated words; "" gives nil.
func words(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var w []string
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			return nil, err
		}
		return w, nil
	}
	return strings.Fields(s), nil
}
