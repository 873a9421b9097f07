package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	am := &cobra.Command{Use: "auth-method", Short: "Manage SSO auth methods (OIDC)"}
	am.AddCommand(newAuthMethodWriteCmd("create"), newAuthMethodWriteCmd("update"), newAuthMethodListCmd(),
		newAuthMethodInfoCmd(), newACLDeleteCmd("auth-method", "NAME", "/v1/acl/auth-method/"))
	br := &cobra.Command{Use: "binding-rule", Short: "Manage binding rules (auth method identities to roles and policies)"}
	br.AddCommand(newBindingRuleCreateCmd(), newBindingRuleListCmd(), newACLDeleteCmd("binding-rule", "ID", "/v1/acl/binding-rule/"))
	for _, c := range rootCmd.Commands() {
		if c.Name() == "acl" {
			c.AddCommand(am, br)
		}
	}
	rootCmd.AddCommand(newLoginCmd())
}

// newAuthMethodWriteCmd is "acl auth-method create|update": the provider
// settings come from a JSON file (-config, Nomad's ACLAuthMethodConfig).
func newAuthMethodWriteCmd(verb string) *cobra.Command {
	cmd := &cobra.Command{Use: verb + " [flags]", Short: strings.ToUpper(verb[:1]) + verb[1:] + " an auth method", Args: exactArgs(0)}
	name := cmd.Flags().String("name", "", "the method's name")
	typ := cmd.Flags().String("type", api.ACLAuthMethodTypeOIDC, "the method's type (OIDC)")
	display := cmd.Flags().String("display-name", "", "the name logins show")
	ttl := cmd.Flags().Duration("max-token-ttl", time.Hour, "how long the tokens it mints last")
	locality := cmd.Flags().String("token-locality", "local", "local or global tokens")
	nameFormat := cmd.Flags().String("token-name-format", "", "the minted tokens' name (${auth_method_name}, ${value.NAME} ...)")
	def := cmd.Flags().Bool("default", false, "the method drover login uses without -method")
	cfgFile := cmd.Flags().String("config", "", "a JSON file with the provider settings (OIDCDiscoveryURL, OIDCClientID ...)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *name == "" || *cfgFile == "" {
			return cmdErr("acl auth-method %s: -name and -config are required", verb)
		}
		b, err := os.ReadFile(*cfgFile)
		if err != nil {
			return cmdErr("acl auth-method %s: %w", verb, err)
		}
		var c api.ACLAuthMethodConfig
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return cmdErr("acl auth-method %s: %s: %w", verb, *cfgFile, err)
		}
		m := api.ACLAuthMethod{Name: *name, Type: *typ, DisplayName: *display, MaxTokenTTL: *ttl,
			TokenLocality: *locality, TokenNameFormat: *nameFormat, Default: *def, Config: &c}
		path := "/v1/acl/auth-method"
		if verb == "update" {
			path += "/" + url.PathEscape(*name)
		}
		var out api.ACLAuthMethod
		if err := apiClient(cmd).Write(cmd.Context(), "POST", path, &m, &out, nil); err != nil {
			return cmdErr("acl auth-method %s: %w", verb, err)
		}
		return printAuthMethod(cmd, &out, *jsonOut)
	}
	return cmd
}

func printAuthMethod(cmd *cobra.Command, m *api.ACLAuthMethod, asJSON bool) error {
	if asJSON {
		return printJSON(cmd.OutOrStdout(), m)
	}
	var disc, client string
	if m.Config != nil {
		disc, client = m.Config.OIDCDiscoveryURL, m.Config.OIDCClientID
	}
	kv(cmd.OutOrStdout(), "Name", m.Name, "Type", m.Type, "Display Name", m.DisplayName, "Default", fmt.Sprint(m.Default),
		"Max Token TTL", m.MaxTokenTTL.String(), "Token Locality", m.TokenLocality, "Discovery URL", disc, "Client ID", client)
	return nil
}

func newAuthMethodListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List auth methods", Args: exactArgs(0)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		ms, err := get[[]*api.ACLAuthMethodListStub](cmd, c, "acl auth-method list", "/v1/acl/auth-methods", nil)
		return listAnswer(ms, "", "Name\tType\tDefault\tDisplay Name", func(m *api.ACLAuthMethodListStub) string {
			return strings.Join([]string{m.Name, m.Type, fmt.Sprint(m.Default), m.DisplayName}, "\t")
		}), err
	})
}

func newAuthMethodInfoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "info NAME", Short: "Show an auth method", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		m, err := get[*api.ACLAuthMethod](cmd, c, "acl auth-method info", "/v1/acl/auth-method/"+url.PathEscape(args[0]), nil)
		return answer{m, func(io.Writer) error { return printAuthMethod(cmd, m, false) }}, err
	})
}

func newBindingRuleCreateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "create [flags]", Short: "Create a binding rule", Args: exactArgs(0)}
	method := cmd.Flags().String("auth-method", "", "the auth method the rule applies to")
	bindType := cmd.Flags().String("bind-type", api.ACLBindTypeRole, "role, policy or management")
	bindName := cmd.Flags().String("bind-name", "", "the role or policy granted (may use ${value.NAME})")
	selector := cmd.Flags().String("selector", "", `which identities match, e.g. "eng" in list.groups (empty: all)`)
	desc := cmd.Flags().String("description", "", "the rule's description")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		r := api.ACLBindingRule{AuthMethod: *method, BindType: *bindType, BindName: *bindName, Selector: *selector, Description: *desc}
		var out api.ACLBindingRule
		if err := apiClient(cmd).Write(cmd.Context(), "POST", "/v1/acl/binding-rule", &r, &out, nil); err != nil {
			return cmdErr("acl binding-rule create: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), &out)
		}
		kv(cmd.OutOrStdout(), "ID", out.ID, "Auth Method", out.AuthMethod, "Selector", out.Selector,
			"Bind Type", out.BindType, "Bind Name", out.BindName)
		return nil
	}
	return cmd
}

func newBindingRuleListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List binding rules", Args: exactArgs(0)}
	method := cmd.Flags().String("auth-method", "", "only this auth method's rules")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		path := "/v1/acl/binding-rules"
		if *method != "" {
			path += "?auth_method=" + url.QueryEscape(*method)
		}
		rs, err := get[[]*api.ACLBindingRule](cmd, c, "acl binding-rule list", path, nil)
		return listAnswer(rs, "", "ID\tAuth Method\tBind Type\tBind Name\tSelector", func(r *api.ACLBindingRule) string {
			return strings.Join([]string{r.ID, r.AuthMethod, r.BindType, r.BindName, r.Selector}, "\t")
		}), err
	})
}

// newLoginCmd is "drover login": an OIDC login in the browser that ends
// with an ACL token, as "nomad login". It listens on -oidc-callback-addr
// for the provider's redirect, which must be one of the method's
// AllowedRedirectURIs (http://localhost:4649/oidc/callback by default).
func newLoginCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "login [flags]", Short: "Sign in through an SSO auth method and get an ACL token", Args: exactArgs(0)}
	method := cmd.Flags().String("method", "", "the auth method (default: the cluster's default method)")
	callback := cmd.Flags().String("oidc-callback-addr", "localhost:4649", "host:port the browser is sent back to")
	noBrowser := cmd.Flags().Bool("no-browser", false, "print the login URL but do not open a browser")
	timeout := cmd.Flags().Duration("timeout", 5*time.Minute, "give up when the login has not completed in this long")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := apiClient(cmd)
		ctx, cancel := context.WithTimeout(cmd.Context(), *timeout)
		defer cancel()
		name := *method
		if name == "" {
			var ms []*api.ACLAuthMethodListStub
			if _, err := c.Query(ctx, "/v1/acl/auth-methods", &ms, nil); err != nil {
				return cmdErr("login: %w", err)
			}
			for _, m := range ms {
				if m.Default {
					name = m.Name
				}
			}
			if name == "" {
				return cmdErr("login: no default auth method; give -method")
			}
		}
		ln, err := net.Listen("tcp", *callback)
		if err != nil {
			return cmdErr("login: listen for the OIDC callback: %w", err)
		}
		defer ln.Close()
		redirect := "http://" + *callback + "/oidc/callback"
		nonce := randomNonce()
		var start api.ACLOIDCAuthURLResponse
		if err := c.Write(ctx, "POST", "/v1/acl/oidc/auth-url",
			&api.ACLOIDCAuthURLRequest{AuthMethodName: name, RedirectURI: redirect, ClientNonce: nonce}, &start, nil); err != nil {
			return cmdErr("login: %w", err)
		}
		type result struct {
			tok *api.ACLToken
			err error
		}
		done := make(chan result, 1)
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/oidc/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			if e := q.Get("error"); e != "" {
				http.Error(w, "Login failed: "+e, http.StatusBadRequest)
				select {
				case done <- result{err: fmt.Errorf("the provider answered %s: %s", e, q.Get("error_description"))}:
				default:
				}
				return
			}
			var tok api.ACLToken
			err := c.Write(ctx, "POST", "/v1/acl/oidc/complete-auth", &api.ACLOIDCCompleteAuthRequest{AuthMethodName: name,
				ClientNonce: nonce, State: q.Get("state"), Code: q.Get("code"), RedirectURI: redirect}, &tok, nil)
			if err != nil {
				http.Error(w, "Login failed: "+err.Error(), http.StatusForbidden)
			} else {
				fmt.Fprintln(w, "Signed in to drover. You can close this window.")
			}
			select {
			case done <- result{&tok, err}:
			default:
			}
		})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Fprintf(cmd.ErrOrStderr(), "Complete the login with your identity provider at:\n\n    %s\n\n", start.AuthURL)
		if !*noBrowser {
			openBrowser(start.AuthURL)
		}
		select {
		case <-ctx.Done():
			return cmdErr("login: %w", errors.New("no callback from the identity provider in time"))
		case res := <-done:
			if res.err != nil {
				return cmdErr("login: %w", res.err)
			}
			if !*jsonOut {
				fmt.Fprintf(cmd.OutOrStdout(), "Successfully logged in via %s\n\n", name)
			}
			return printToken(cmd.OutOrStdout(), res.tok, *jsonOut)
		}
	}
	return cmd
}

func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// openBrowser tries xdg-open (Linux) or open (macOS); the URL is printed
// either way.
func openBrowser(u string) {
	for _, c := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(c); err == nil {
			if exec.Command(p, u).Start() == nil {
				return
			}
		}
	}
}
