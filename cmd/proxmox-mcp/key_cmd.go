package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/keys"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

func keyCommands() map[string]command {
	return map[string]command{
		"key create": {"create an API key bound to a profile or a custom policy; prints the key once", (*cli).keyCreate},
		"key list":   {"list API keys", (*cli).keyList},
		"key show":   {"show one API key by id or name", (*cli).keyShow},
		"key rotate": {"replace a key with a new one of the same name and binding", (*cli).keyRotate},
		"key revoke": {"revoke a key at once", (*cli).keyRevoke},
	}
}

// stateFlags are the --config and --state-dir flags every command of this
// issue takes.
type stateFlags struct {
	config, stateDir *string
}

func addStateFlags(fs *flag.FlagSet) stateFlags {
	return stateFlags{
		config:   fs.String("config", "", "configuration file (default "+config.DefaultFile+" if it exists)"),
		stateDir: fs.String("state-dir", "", "state directory, overriding the configuration's (default "+config.DefaultStateDir+")"),
	}
}

func (s stateFlags) resolve() (*config.Config, error) {
	return config.Resolve(*s.config, *s.stateDir)
}

// openKeys opens the key store, checking bindings against the built-in
// profiles and the active custom policies. In cluster mode its changes
// are made on pmxcfs (clusterShared).
func (c *cli) openKeys(cfg *config.Config) (*keys.Store, error) {
	pol, err := policy.NewStore(cfg.StateDir, nil)
	if err != nil {
		return nil, err
	}
	shared, err := c.clusterShared(cfg)
	if err != nil {
		return nil, err
	}
	return keys.Open(cfg.StateDir, keys.Options{Shared: shared, CheckBinding: func(b keys.Binding) error {
		if b.Profile != "" {
			if !policy.IsProfile(b.Profile) {
				return fmt.Errorf("profile %q does not exist (profiles: %s)", b.Profile, strings.Join(policy.Profiles(), ", "))
			}
			return nil
		}
		if _, err := pol.Active(b.Policy); err != nil {
			return fmt.Errorf("policy %q cannot be bound: %w", b.Policy, err)
		}
		return nil
	}})
}

func (c *cli) keyCreate(args []string) error {
	fs := flag.NewFlagSet("key create", flag.ContinueOnError)
	st := addStateFlags(fs)
	name := fs.String("name", "", "the key's name, unique among current keys")
	profile := fs.String("profile", "", "built-in profile: "+strings.Join(policy.Profiles(), ", "))
	pol := fs.String("policy", "", "custom policy id")
	expires := fs.String("expires", "", "expiry: RFC 3339 time, Go duration (720h) or days (30d); none if absent")
	asJSON := fs.Bool("json", false, "print one JSON object")
	const synopsis = "proxmox-mcp key create --name NAME (--profile P | --policy ID) [--expires WHEN] [--json]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	if *name == "" {
		return usagef("--name is required (usage: %s)", synopsis)
	}
	if (*profile == "") == (*pol == "") {
		return usagef("give exactly one of --profile and --policy (usage: %s)", synopsis)
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	store, err := c.openKeys(cfg)
	if err != nil {
		return err
	}
	var exp time.Time
	if isFlagSet(fs, "expires") {
		if exp, err = keys.ParseExpiry(*expires, store.Now()); err != nil {
			return fmt.Errorf("--expires: %w", err)
		}
	}
	created, err := store.Create(context.Background(), keys.CreateRequest{Name: *name, Binding: keys.Binding{Profile: *profile, Policy: *pol}, Expires: exp})
	if err != nil {
		return err
	}
	return c.printNewKey("created", created, store.Now(), *asJSON)
}

func (c *cli) printNewKey(verb string, k keys.Created, now time.Time, asJSON bool) error {
	if asJSON {
		return writeJSON(c, struct {
			Key    string    `json:"key"`
			Record keys.Info `json:"record"`
		}{k.Key.Reveal(), k.Record.Info(now)})
	}
	fmt.Fprintf(c.stdout, "key %s: %s\n", verb, describeKey(k.Record.Info(now)))
	fmt.Fprintln(c.stdout, k.Key.Reveal())
	fmt.Fprintln(c.stdout, "This is the only time the key is shown; store it now.")
	return nil
}

func describeKey(i keys.Info) string {
	binding := "profile " + deref(i.Profile)
	if i.Policy != nil {
		binding = "policy " + *i.Policy
	}
	exp := "never"
	if i.Expires != nil {
		exp = i.Expires.Format(time.RFC3339)
	}
	return fmt.Sprintf("id %s, name %s, %s, %s, expires %s", i.ID, i.Name, binding, i.State, exp)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func (c *cli) keyList(args []string) error {
	fs := flag.NewFlagSet("key list", flag.ContinueOnError)
	st := addStateFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object {\"keys\": [...]}")
	if _, err := parse(fs, args, 0, "proxmox-mcp key list [--json]"); err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	store, err := c.openKeys(cfg)
	if err != nil {
		return err
	}
	recs, err := store.List()
	if err != nil {
		return err
	}
	now := store.Now()
	infos := make([]keys.Info, len(recs))
	for i := range recs {
		infos[i] = recs[i].Info(now)
	}
	if *asJSON {
		return writeJSON(c, struct {
			Keys []keys.Info `json:"keys"`
		}{infos})
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tBINDING\tSTATE\tCREATED\tEXPIRES")
	for _, i := range infos {
		binding := "profile " + deref(i.Profile)
		if i.Policy != nil {
			binding = "policy " + *i.Policy
		}
		exp := "-"
		if i.Expires != nil {
			exp = i.Expires.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", i.ID, i.Name, binding, i.State, i.Created.Format(time.RFC3339), exp)
	}
	return tw.Flush()
}

func (c *cli) keyShow(args []string) error {
	fs := flag.NewFlagSet("key show", flag.ContinueOnError)
	st := addStateFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	refs, err := parse(fs, args, 1, "proxmox-mcp key show ID|NAME [--json]")
	if err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	store, err := c.openKeys(cfg)
	if err != nil {
		return err
	}
	rec, err := store.Get(refs[0])
	if err != nil {
		return err
	}
	info := rec.Info(store.Now())
	if *asJSON {
		return writeJSON(c, info)
	}
	fmt.Fprintln(c.stdout, describeKey(info))
	fmt.Fprintf(c.stdout, "created %s\n", info.Created.Format(time.RFC3339))
	if info.Revoked != nil {
		fmt.Fprintf(c.stdout, "revoked %s\n", info.Revoked.Format(time.RFC3339))
	}
	if info.RotatedFrom != nil {
		fmt.Fprintf(c.stdout, "rotated from %s\n", *info.RotatedFrom)
	}
	if info.RotatedTo != nil {
		fmt.Fprintf(c.stdout, "rotated to %s\n", *info.RotatedTo)
	}
	return nil
}

func (c *cli) keyRotate(args []string) error {
	fs := flag.NewFlagSet("key rotate", flag.ContinueOnError)
	st := addStateFlags(fs)
	expires := fs.String("expires", "", "expiry of the new key (default: the old key's)")
	grace := fs.Duration("grace", 0, "keep the old key working this long (default: it stops at once)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	refs, err := parse(fs, args, 1, "proxmox-mcp key rotate ID|NAME [--expires WHEN] [--grace DURATION] [--json]")
	if err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	store, err := c.openKeys(cfg)
	if err != nil {
		return err
	}
	var exp time.Time
	if isFlagSet(fs, "expires") {
		if exp, err = keys.ParseExpiry(*expires, store.Now()); err != nil {
			return fmt.Errorf("--expires: %w", err)
		}
	}
	created, err := store.Rotate(context.Background(), refs[0], keys.RotateRequest{Expires: exp, Grace: *grace})
	if err != nil {
		return err
	}
	return c.printNewKey("rotated", created, store.Now(), *asJSON)
}

func (c *cli) keyRevoke(args []string) error {
	fs := flag.NewFlagSet("key revoke", flag.ContinueOnError)
	st := addStateFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	refs, err := parse(fs, args, 1, "proxmox-mcp key revoke ID|NAME [--json]")
	if err != nil {
		return err
	}
	cfg, err := st.resolve()
	if err != nil {
		return err
	}
	store, err := c.openKeys(cfg)
	if err != nil {
		return err
	}
	rec, err := store.Revoke(context.Background(), refs[0])
	if err != nil {
		return err
	}
	info := rec.Info(store.Now())
	if *asJSON {
		return writeJSON(c, info)
	}
	fmt.Fprintf(c.stdout, "key revoked: %s\n", describeKey(info))
	return nil
}
