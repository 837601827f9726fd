package valkey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	vk "github.com/valkey-io/valkey-go"
)

// The administrative check of a ValkeyACL's rules. A user without spec.allowAdmin must not get
// any command that could lock the operator out, split the cluster's writes, read every key past
// its key patterns, stop a node or change the cluster's membership. The set is not a list kept
// here: it is read from the node's own command table (COMMAND), so a newer Valkey's commands,
// subcommands and aliases are covered the day it runs, and Valkey itself (ACL DRYRUN on a
// scratch user holding the rules) says which of them the rules grant.
//
// The rule, in the words docs/security.md uses: a command or subcommand is administrative when
// the node puts it in @admin or @dangerous (or flags it admin), unless it also puts it in a data
// category (@keyspace, @read, @write). A command in a data category acts on the data, which is
// the application's business, and the user's key patterns still apply where the command names
// keys: KEYS, FLUSHDB, FLUSHALL, SORT, SWAPDB, MIGRATE, RESTORE, and the two @admin ones of
// Valkey 9.1, PFDEBUG and CLUSTER FLUSHSLOT (+@write grants both), stay grantable. INFO is the
// one named exception: it is @dangerous and in no data category, but it only reads, and client
// libraries ask it.

// RulesRefused is CheckACL's answer that the rules themselves are wrong: Valkey refuses them, or
// they cannot be written safely. It is final for the resource's generation; any other error of
// CheckACL is the node's or the network's, and the check is tried again.
type RulesRefused struct{ Reason string }

func (e *RulesRefused) Error() string { return e.Reason }

// notAdministrative are commands the node puts in @dangerous and in no data category that a
// user may still get without spec.allowAdmin, each for the reason given.
var notAdministrative = []string{
	"info", // reads only; client libraries ask it for the server's version and role
}

// dataCategories are the categories of commands that act on the data: an @admin or @dangerous
// command in one of them is dangerous for the data (the application's business), not for the
// operator, its fences or the cluster's membership.
var dataCategories = []string{"@keyspace", "@read", "@write"}

// commandEntry is one command or subcommand of the node's command table (COMMAND's reply).
type commandEntry struct {
	// name is lower case, "parent|sub" for a subcommand.
	name       string
	arity      int64
	flags      []string
	categories []string
	subs       []commandEntry
}

// administrative says whether e needs spec.allowAdmin (the rule above).
func (e commandEntry) administrative() bool {
	if !slices.Contains(e.categories, "@admin") && !slices.Contains(e.flags, "admin") && !slices.Contains(e.categories, "@dangerous") {
		return false
	}
	for _, c := range dataCategories {
		if slices.Contains(e.categories, c) {
			return false
		}
	}
	return !slices.Contains(notAdministrative, e.name)
}

// call is a command line DRYRUN accepts for e (Valkey checks the arity first): its name's words,
// then first (a first argument, or none), then placeholders up to the arity.
func (e commandEntry) call(first string) []string {
	args := strings.Split(strings.ToUpper(e.name), "|")
	if first != "" {
		args = append(args, first)
	}
	need := e.arity
	if need < 0 {
		need = -need
	}
	for int64(len(args)) < need {
		args = append(args, "x")
	}
	return args
}

// administrativeCommands flattens the command table into the administrative commands and
// subcommands, sorted by name.
func administrativeCommands(table []commandEntry) []commandEntry {
	var out []commandEntry
	var walk func([]commandEntry)
	walk = func(entries []commandEntry) {
		for _, e := range entries {
			if e.administrative() {
				out = append(out, e)
			}
			walk(e.subs)
		}
	}
	walk(table)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// parseCommandTable reads COMMAND's reply: per command an array of name, arity, flags, first
// key, last key, step, ACL categories, tips, key specifications and subcommands (the last four
// since Redis 7; a shorter entry has no subcommands).
func parseCommandTable(entries []vk.ValkeyMessage) ([]commandEntry, error) {
	out := make([]commandEntry, 0, len(entries))
	for i, m := range entries {
		fields, err := m.ToArray()
		if err != nil || len(fields) < 7 {
			return nil, fmt.Errorf("COMMAND entry %d is not a command description (%d fields): %v", i, len(fields), err)
		}
		var e commandEntry
		if e.name, err = fields[0].ToString(); err != nil {
			return nil, fmt.Errorf("COMMAND entry %d: name: %w", i, err)
		}
		e.name = strings.ToLower(e.name)
		if e.arity, err = fields[1].AsInt64(); err != nil {
			return nil, fmt.Errorf("COMMAND entry %s: arity: %w", e.name, err)
		}
		if e.flags, err = fields[2].AsStrSlice(); err != nil {
			return nil, fmt.Errorf("COMMAND entry %s: flags: %w", e.name, err)
		}
		if e.categories, err = fields[6].AsStrSlice(); err != nil {
			return nil, fmt.Errorf("COMMAND entry %s: categories: %w", e.name, err)
		}
		if len(fields) > 9 {
			subs, err := fields[9].ToArray()
			if err != nil {
				return nil, fmt.Errorf("COMMAND entry %s: subcommands: %w", e.name, err)
			}
			if e.subs, err = parseCommandTable(subs); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// firstArgGrants are the first arguments rules allow a command with (+cmd|arg, Valkey's
// first-argument rule, which it accepts only for a command without subcommands): such a rule
// grants the command with that first argument alone, so DRYRUN must try that argument too.
func firstArgGrants(rules []string) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		r = strings.Trim(r, "()")
		if !strings.HasPrefix(r, "+") || strings.HasPrefix(r, "+@") {
			continue
		}
		cmd, arg, ok := strings.Cut(r[1:], "|")
		if !ok || arg == "" {
			continue
		}
		cmd = strings.ToLower(cmd)
		out[cmd] = append(out[cmd], arg)
	}
	return out
}

// scratchRules are the rules the check sets on its scratch user: the user's own, from nothing,
// with every key and channel added to each of its selectors (root and parenthesised), so that
// DRYRUN answers only whether the commands are granted, not whether a placeholder key matches a
// pattern; and the user off with no password at the end, whatever the rules say, so that nobody
// can log in as it while it exists.
func scratchRules(rules []string) []string {
	out := []string{"reset"}
	inSelector := false
	for _, r := range rules {
		if strings.HasPrefix(r, "(") {
			inSelector = true
		}
		if inSelector && strings.HasSuffix(r, ")") {
			if body := strings.TrimSuffix(r, ")"); body != "" {
				out = append(out, body)
			}
			out = append(out, "allkeys", "allchannels)")
			inSelector = false
			continue
		}
		out = append(out, r)
	}
	return append(out, "allkeys", "allchannels", "resetpass", "off")
}

// CheckACL tries u's rules on the node at podIP under a scratch user (off, no password) that is
// deleted again, so that Valkey itself judges them before any node gets them, and returns the
// administrative commands they grant (those of the node's command table, by ACL DRYRUN). A
// *RulesRefused error says the rules are wrong; any other error, that the check could not run.
func (p *Pool) CheckACL(ctx context.Context, podIP string, u ACLUser) (admin []string, err error) {
	if r := unwritableRule(u.Rules); r != "" {
		return nil, &RulesRefused{Reason: r}
	}
	err = p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		if err := allowACLs(ctx, c); err != nil {
			return err
		}
		reply, err := c.Do(ctx, c.B().Command().Build()).ToArray()
		if err != nil {
			return fmt.Errorf("COMMAND: %w", err)
		}
		table, err := parseCommandTable(reply)
		if err != nil {
			return err
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		scratch := "vkf-check-" + hex.EncodeToString(b[:])
		if err := c.Do(ctx, c.B().AclSetuser().Username(scratch).Rule(scratchRules(u.Rules)...).Build()).Error(); err != nil {
			if _, isReply := vk.IsValkeyErr(err); isReply {
				return &RulesRefused{Reason: "the rules are refused by Valkey: " + err.Error()}
			}
			return err
		}
		defer func() { _ = c.Do(context.WithoutCancel(ctx), c.B().AclDeluser().Username(scratch).Build()).Error() }()
		admin, err = dryRun(ctx, c, scratch, administrativeCommands(table), firstArgGrants(u.Rules))
		return err
	})
	var refused *RulesRefused
	if errors.As(err, &refused) {
		return nil, refused
	}
	return admin, err
}

// dryRun asks the node, in one round trip, which of cmds the scratch user may run: each with
// placeholder arguments, and a command without subcommands also with each first argument the
// rules name for it. It returns them as "CONFIG GET", "DEBUG SLEEP", once each.
func dryRun(ctx context.Context, c vk.Client, scratch string, cmds []commandEntry, firstArgs map[string][]string) ([]string, error) {
	type probe struct{ shown string }
	var probes []probe
	var calls vk.Commands
	add := func(e commandEntry, first string) {
		line := e.call(first)
		shown := strings.ReplaceAll(strings.ToUpper(e.name), "|", " ")
		if first != "" {
			shown += " " + strings.ToUpper(first)
		}
		probes = append(probes, probe{shown})
		calls = append(calls, c.B().Arbitrary("ACL", "DRYRUN").Args(append([]string{scratch}, line...)...).Build())
	}
	for _, e := range cmds {
		add(e, "")
		if len(e.subs) == 0 {
			for _, arg := range firstArgs[e.name] {
				add(e, arg)
			}
		}
	}
	var granted []string
	for i, res := range c.DoMulti(ctx, calls...) {
		// DRYRUN answers OK when the user may run the command, a text saying why not when it may
		// not, and an error when it could not judge (which must not pass for "not granted").
		reply, err := res.ToString()
		if err != nil {
			return nil, fmt.Errorf("ACL DRYRUN of %s: %w", probes[i].shown, err)
		}
		if reply == "OK" && !slices.Contains(granted, probes[i].shown) {
			granted = append(granted, probes[i].shown)
		}
	}
	return granted, nil
}

// unwritableRule says why a rule cannot go into the users' file the pods start from, or "". The
// file is read as Valkey reads its configuration: a quote opens a quoted argument, and one that
// is not closed before the end of the word makes the whole file unreadable, so the node would
// not start again. The API refuses such rules; this keeps one made before it did from reaching
// a node.
func unwritableRule(rules []string) string {
	for _, r := range rules {
		if strings.ContainsAny(r, "\"'") || strings.ContainsFunc(r, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			return fmt.Sprintf("rule %q holds a quote, a space or a control character: a node could not read its users' file again at its next start; write the rule without it", r)
		}
	}
	return ""
}
