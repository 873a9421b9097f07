package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	a := &cobra.Command{Use: "acl", Short: "Manage ACLs: bootstrap, policies, tokens and roles"}
	pol := &cobra.Command{Use: "policy", Short: "Manage ACL policies"}
	pol.AddCommand(newACLPolicyApplyCmd(), newACLPolicyListCmd(), newACLPolicyInfoCmd(), newACLDeleteCmd("policy", "NAME", "/v1/acl/policy/"))
	tok := &cobra.Command{Use: "token", Short: "Manage ACL tokens"}
	tok.AddCommand(newACLTokenCreateCmd(), newACLTokenListCmd(), newACLTokenInfoCmd("info", "ACCESSOR", "Show a token"),
		newACLTokenInfoCmd("self", "", "Show the token in use"), newACLDeleteCmd("token", "ACCESSOR", "/v1/acl/token/"))
	role := &cobra.Command{Use: "role", Short: "Manage ACL roles"}
	role.AddCommand(newACLRoleCreateCmd(), newACLRoleListCmd(), newACLDeleteCmd("role", "ID", "/v1/acl/role/"))
	a.AddCommand(newACLBootstrapCmd(), pol, tok, role)
	rootCmd.AddCommand(a)
}

func newACLBootstrapCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bootstrap", Short: "Create the first management token (once)", Args: exactArgs(0)}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var t api.ACLToken
		if err := apiClient(cmd).Write(cmd.Context(), "POST", "/v1/acl/bootstrap", nil, &t, nil); err != nil {
			return cmdErr("acl bootstrap: %w", err)
		}
		return printToken(cmd.OutOrStdout(), &t, *jsonOut)
	}
	return cmd
}

func printToken(w io.Writer, t *api.ACLToken, asJSON bool) error {
	if asJSON {
		return printJSON(w, t)
	}
	exp := "never"
	if t.ExpirationTime != nil {
		exp = t.ExpirationTime.Format(time.RFC3339)
	}
	roles := make([]string, 0, len(t.Roles))
	for _, r := range t.Roles {
		roles = append(roles, r.Name)
	}
	kv(w, "Accessor ID", t.AccessorID, "Secret ID", t.SecretID, "Name", t.Name, "Type", t.Type,
		"Policies", strings.Join(t.Policies, ", "), "Roles", strings.Join(roles, ", "), "Expiry Time", exp,
		"Create Time", t.CreateTime.Format(time.RFC3339))
	return nil
}

func newACLPolicyApplyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "apply [flags] NAME FILE", Short: "Create or update a policy from an HCL rules file (- for stdin)", Args: exactArgs(2)}
	desc := cmd.Flags().String("description", "", "the policy's description")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var b []byte
		var err error
		if args[1] == "-" {
			b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxSpecFile))
		} else {
			b, err = os.ReadFile(args[1])
		}
		if err != nil {
			return cmdErr("acl policy apply: %w", err)
		}
		p := api.ACLPolicy{Name: args[0], Description: *desc, Rules: string(b)}
		if err := apiClient(cmd).Write(cmd.Context(), "PUT", "/v1/acl/policy/"+url.PathEscape(p.Name), &p, nil, nil); err != nil {
			return cmdErr("acl policy apply: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully wrote %q ACL policy!\n", p.Name)
		return nil
	}
	return cmd
}

func newACLPolicyListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List policies", Args: exactArgs(0)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		ps, err := get[[]*api.ACLPolicyListStub](cmd, c, "acl policy list", "/v1/acl/policies", nil)
		return listAnswer(ps, "", "Name\tDescription", func(p *api.ACLPolicyListStub) string {
			return p.Name + "\t" + p.Description
		}), err
	})
}

func newACLPolicyInfoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "info NAME", Short: "Show a policy and its rules", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		p, err := get[*api.ACLPolicy](cmd, c, "acl policy info", "/v1/acl/policy/"+url.PathEscape(args[0]), nil)
		return answer{p, func(out io.Writer) error {
			kv(out, "Name", p.Name, "Description", p.Description)
			fmt.Fprintf(out, "\nRules\n\n%s\n", strings.TrimSpace(p.Rules))
			return nil
		}}, err
	})
}

func newACLDeleteCmd(what, arg, path string) *cobra.Command {
	cmd := &cobra.Command{Use: "delete " + arg, Short: "Delete a " + what, Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apiClient(cmd).Write(cmd.Context(), "DELETE", path+url.PathEscape(args[0]), nil, nil, nil); err != nil {
			return cmdErr("acl %s delete: %w", what, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully deleted ACL %s %q\n", what, args[0])
		return nil
	}
	return cmd
}

func newACLTokenCreateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "create [flags]", Short: "Create a token", Args: exactArgs(0)}
	name := cmd.Flags().String("name", "", "the token's name")
	typ := cmd.Flags().String("type", api.ACLTokenClient, "client or management")
	policies := cmd.Flags().StringArray("policy", nil, "a policy of the token (repeatable)")
	roles := cmd.Flags().StringArray("role-name", nil, "a role of the token, by name (repeatable)")
	ttl := cmd.Flags().Duration("ttl", 0, "expire the token after this long (0: never)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		t := api.ACLToken{Name: *name, Type: *typ, Policies: *policies, ExpirationTTL: *ttl}
		for _, r := range *roles {
			t.Roles = append(t.Roles, &api.ACLTokenRoleLink{Name: r})
		}
		var out api.ACLToken
		if err := apiClient(cmd).Write(cmd.Context(), "POST", "/v1/acl/token", &t, &out, nil); err != nil {
			return cmdErr("acl token create: %w", err)
		}
		return printToken(cmd.OutOrStdout(), &out, *jsonOut)
	}
	return cmd
}

func newACLTokenListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List tokens (without their secrets)", Args: exactArgs(0)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		ts, err := get[[]*api.ACLToken](cmd, c, "acl token list", "/v1/acl/tokens", nil)
		return listAnswer(ts, "", "Name\tType\tAccessor ID\tPolicies", func(t *api.ACLToken) string {
			return strings.Join([]string{t.Name, t.Type, t.AccessorID, strings.Join(t.Policies, ",")}, "\t")
		}), err
	})
}

func newACLTokenInfoCmd(use, arg, short string) *cobra.Command {
	n := 0
	if arg != "" {
		n = 1
	}
	cmd := &cobra.Command{Use: strings.TrimSpace(use + " " + arg), Short: short, Args: exactArgs(n)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		path := "/v1/acl/token/self"
		if arg != "" {
			path = "/v1/acl/token/" + url.PathEscape(args[0])
		}
		t, err := get[*api.ACLToken](cmd, c, "acl token "+use, path, nil)
		return answer{t, func(out io.Writer) error { return printToken(out, t, false) }}, err
	})
}

func newACLRoleCreateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "create [flags]", Short: "Create a role", Args: exactArgs(0)}
	name := cmd.Flags().String("name", "", "the role's name")
	desc := cmd.Flags().String("description", "", "the role's description")
	policies := cmd.Flags().StringArray("policy", nil, "a policy of the role (repeatable)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		r := api.ACLRole{Name: *name, Description: *desc}
		for _, p := range *policies {
			r.Policies = append(r.Policies, &api.ACLRolePolicyLink{Name: p})
		}
		var out api.ACLRole
		if err := apiClient(cmd).Write(cmd.Context(), "POST", "/v1/acl/role", &r, &out, nil); err != nil {
			return cmdErr("acl role create: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), &out)
		}
		kv(cmd.OutOrStdout(), "ID", out.ID, "Name", out.Name, "Description", out.Description)
		return nil
	}
	return cmd
}

func newACLRoleListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List roles", Args: exactArgs(0)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		rs, err := get[[]*api.ACLRole](cmd, c, "acl role list", "/v1/acl/roles", nil)
		return listAnswer(rs, "", "ID\tName\tPolicies", func(r *api.ACLRole) string {
			var ps []string
			for _, p := range r.Policies {
				ps = append(ps, p.Name)
			}
			return strings.Join([]string{r.ID, r.Name, strings.Join(ps, ",")}, "\t")
		}), err
	})
}
