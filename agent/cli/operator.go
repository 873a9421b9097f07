package cli

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	raft := &cobra.Command{Use: "raft", Short: "Inspect and change the Raft peer set"}
	raft.AddCommand(newRaftListPeersCmd(), newRaftRemovePeerCmd())
	snap := &cobra.Command{Use: "snapshot", Short: "Save and restore the cluster state"}
	snap.AddCommand(newSnapshotSaveCmd(), newSnapshotRestoreCmd())
	keyring := &cobra.Command{Use: "keyring", Short: "Manage the gossip encryption keys of every server"}
	keyring.AddCommand(newKeyringListCmd(), newKeyringGenerateCmd(),
		newKeyringOpCmd("install", "Install a key on every server (run first when rotating)"),
		newKeyringOpCmd("use", "Make an installed key the one every server encrypts with"),
		newKeyringOpCmd("remove", "Remove a key from every server (not the one in use)"))
	gossip := &cobra.Command{Use: "gossip", Short: "Gossip tools"}
	gossip.AddCommand(keyring)
	operatorCmd.AddCommand(raft, snap, gossip)
}

func newRaftListPeersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list-peers", Short: "List the Raft peers", Args: exactArgs(0)}
	stale := cmd.Flags().Bool("stale", false, "let any server answer from its own (possibly stale) view")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		conf, err := c.RaftConfiguration(cmd.Context(), &api.QueryOptions{AllowStale: *stale})
		if err != nil {
			return answer{}, cmdErr("list raft peers: %w", err)
		}
		return answer{conf, func(out io.Writer) error {
			listTable(out, conf.Servers, "", "Node\tID\tAddress\tState\tVoter\tRaftProtocol", func(s *api.RaftServer) string {
				state := "follower"
				if s.Leader {
					state = "leader"
				}
				return fmt.Sprintf("%s\t%s\t%s\t%s\t%v\t%s", s.Node, s.ID, s.Address, state, s.Voter, s.RaftProtocol)
			})
			return nil
		}}, nil
	})
}

func newRaftRemovePeerCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "remove-peer", Short: "Remove a server from the Raft peer set", Args: exactArgs(0)}
	id := cmd.Flags().String("peer-id", "", "Raft ID of the server to remove")
	addr := cmd.Flags().String("peer-address", "", "Raft address (host:port) of the server to remove")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if (*id == "") == (*addr == "") {
			return usageErr("give exactly one of -peer-id or -peer-address")
		}
		if err := apiClient(cmd).RemoveRaftPeer(cmd.Context(), *id, *addr); err != nil {
			return cmdErr("remove raft peer: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Removed peer %s%s\n", *id, *addr)
		return nil
	}
	return cmd
}

func newSnapshotSaveCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "save FILE", Short: "Save a snapshot of the whole cluster state to FILE", Args: exactArgs(1)}
	stale := cmd.Flags().Bool("stale", false, "let any server answer from its own (possibly stale) state")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		path := args[0]
		rc, err := apiClient(cmd).SnapshotSave(cmd.Context(), &api.QueryOptions{AllowStale: *stale})
		if err != nil {
			return cmdErr("save snapshot: %w", err)
		}
		defer rc.Close()
		// Write next to the target and rename: a failed save never leaves
		// a truncated file under the asked name.
		tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
		if err != nil {
			return cmdErr("save snapshot: %w", err)
		}
		n, err := io.Copy(tmp, rc)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return cmdErr("save snapshot: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "State file written to %s (%d bytes)\n", path, n)
		return nil
	}
	return cmd
}

func newSnapshotRestoreCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "restore FILE", Short: "Replace the whole cluster state with a saved snapshot", Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		f, err := os.Open(args[0])
		if err != nil {
			return cmdErr("restore snapshot: %w", err)
		}
		defer f.Close()
		resp, err := apiClient(cmd).SnapshotRestore(cmd.Context(), f)
		if err != nil {
			return cmdErr("restore snapshot: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Snapshot restored (raft index %d)\n", resp.Index)
		return nil
	}
	return cmd
}

func newKeyringListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List the keys installed on the servers", Args: exactArgs(0)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		resp, err := c.KeyringOperation(cmd.Context(), "list", "")
		if err != nil {
			return answer{}, cmdErr("list keys: %w", err)
		}
		return answer{resp, func(out io.Writer) error {
			keys := make([]string, 0, len(resp.Keys))
			for k := range resp.Keys {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			listTable(out, keys, "", "Key\tInstalled\tPrimary", func(k string) string {
				return fmt.Sprintf("%s\t%d/%d\t%d", k, resp.Keys[k], resp.NumNodes, resp.PrimaryKeys[k])
			})
			return nil
		}}, nil
	})
}

func newKeyringGenerateCmd() *cobra.Command {
	return &cobra.Command{
		Use: "generate", Short: "Print a new random 32-byte key (for -encrypt)", Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			k := make([]byte, 32)
			if _, err := rand.Read(k); err != nil {
				return cmdErr("generate key: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), base64.StdEncoding.EncodeToString(k))
			return nil
		},
	}
}

func newKeyringOpCmd(op, short string) *cobra.Command {
	return &cobra.Command{
		Use: op + " KEY", Short: short, Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := apiClient(cmd).KeyringOperation(cmd.Context(), op, args[0])
			if err != nil {
				return cmdErr("key %s: %w", op, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Key %s done on %d/%d servers\n", op, resp.NumResp-resp.NumErr, resp.NumNodes)
			return nil
		},
	}
}
