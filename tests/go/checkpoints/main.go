// Command checkpoints verifies pokdeng's C2SP checkpoints, and inclusion and consistency proofs
// against them, with Go's golang.org/x/mod/sumdb/note and golang.org/x/mod/sumdb/tlog: the
// implementations the signed-note and tlog-checkpoint formats come from.
//
// It reads one JSON request on standard input and writes one JSON answer on standard output:
//
//	{"vkeys": ["<name>+<hash>+<key>", ...],
//	 "notes": ["<signed note>", ...],
//	 "inclusion": [{"note": i, "entry": "<base64 leaf input>", "index": n, "proof": ["<base64>", ...]}, ...],
//	 "consistency": [{"old": i, "new": j, "proof": ["<base64>", ...]}, ...],
//	 "publicKeys": [{"name": "<key name>", "key": "<base64 of the 32-byte Ed25519 public key>"}, ...],
//	 "sign": [{"skey": "PRIVATE+KEY+<name>+<hash>+<base64(0x01 || seed)>", "text": "<note text>"}, ...]}
//
// Each note is opened with note.Open and its text parsed as a tlog-checkpoint (origin, decimal
// size, base64 root). An inclusion item checks, with tlog.CheckRecord, that the leaf whose input
// is "entry" (its hash is tlog.RecordHash(entry) = SHA-256(0x00 || entry), RFC 6962's leaf hash)
// is leaf "index" of the tree of note i. A consistency item checks, with tlog.CheckTree, that the
// tree of note j extends the tree of note i. The answer gives, item by item, "ok" and the error.
// For each of "publicKeys" it gives the verifier key note.NewEd25519VerifierKey makes, and for
// each of "sign" the note note.Sign makes (a test key's: Ed25519 is deterministic, so the bytes
// can be compared with another implementation's).
package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type inclusionItem struct {
	Note  int      `json:"note"`
	Entry string   `json:"entry"`
	Index int64    `json:"index"`
	Proof []string `json:"proof"`
}

type consistencyItem struct {
	Old   int      `json:"old"`
	New   int      `json:"new"`
	Proof []string `json:"proof"`
}

type publicKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type signItem struct {
	SKey string `json:"skey"`
	Text string `json:"text"`
}

type request struct {
	VKeys       []string          `json:"vkeys"`
	Notes       []string          `json:"notes"`
	Inclusion   []inclusionItem   `json:"inclusion"`
	Consistency []consistencyItem `json:"consistency"`
	PublicKeys  []publicKey       `json:"publicKeys"`
	Sign        []signItem        `json:"sign"`
}

type checkpoint struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	Root   string `json:"root"`
	hash   tlog.Hash
}

type noteResult struct {
	OK      bool        `json:"ok"`
	Error   string      `json:"error,omitempty"`
	Signers []string    `json:"signers,omitempty"`
	Tree    *checkpoint `json:"checkpoint,omitempty"`
}

type result struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

type answer struct {
	Notes       []noteResult `json:"notes"`
	Inclusion   []result     `json:"inclusion"`
	Consistency []result     `json:"consistency"`
	VKeys       []string     `json:"vkeys"`
	Signed      []string     `json:"signed"`
}

// parseCheckpoint reads a tlog-checkpoint body: origin, tree size, root hash, each on its own line.
func parseCheckpoint(text string) (*checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasSuffix(text, "\n") || len(lines) < 3 {
		return nil, errors.New("a checkpoint is at least three lines")
	}
	for _, line := range lines {
		if line == "" {
			return nil, errors.New("a checkpoint has no empty line")
		}
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, fmt.Errorf("malformed tree size %q", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return nil, fmt.Errorf("malformed root hash %q", lines[2])
	}
	c := &checkpoint{Origin: lines[0], Size: size, Root: lines[2]}
	copy(c.hash[:], root)
	return c, nil
}

func hashes(items []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(items))
	for i, item := range items {
		raw, err := base64.StdEncoding.DecodeString(item)
		if err != nil || len(raw) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is not 32 bytes of base64", i)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}

func fail(err error) result { return result{Error: err.Error()} }

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "checkpoints: reading the request:", err)
		os.Exit(2)
	}
	var verifiers []note.Verifier
	for _, vkey := range req.VKeys {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			fmt.Fprintf(os.Stderr, "checkpoints: verifier key %q: %v\n", vkey, err)
			os.Exit(2)
		}
		verifiers = append(verifiers, v)
	}
	known := note.VerifierList(verifiers...)

	ans := answer{Notes: []noteResult{}, Inclusion: []result{}, Consistency: []result{}, VKeys: []string{}, Signed: []string{}}
	trees := make([]*checkpoint, len(req.Notes))
	for i, text := range req.Notes {
		n, err := note.Open([]byte(text), known)
		if err != nil {
			ans.Notes = append(ans.Notes, noteResult{Error: err.Error()})
			continue
		}
		c, err := parseCheckpoint(n.Text)
		if err != nil {
			ans.Notes = append(ans.Notes, noteResult{Error: err.Error()})
			continue
		}
		var signers []string
		for _, sig := range n.Sigs {
			signers = append(signers, fmt.Sprintf("%s+%08x", sig.Name, sig.Hash))
		}
		trees[i] = c
		ans.Notes = append(ans.Notes, noteResult{OK: true, Signers: signers, Tree: c})
	}
	tree := func(i int) (*checkpoint, error) {
		if i < 0 || i >= len(trees) || trees[i] == nil {
			return nil, fmt.Errorf("note %d did not verify", i)
		}
		return trees[i], nil
	}

	for _, item := range req.Inclusion {
		c, err := tree(item.Note)
		if err != nil {
			ans.Inclusion = append(ans.Inclusion, fail(err))
			continue
		}
		entry, err := base64.StdEncoding.DecodeString(item.Entry)
		if err != nil {
			ans.Inclusion = append(ans.Inclusion, fail(err))
			continue
		}
		proof, err := hashes(item.Proof)
		if err != nil {
			ans.Inclusion = append(ans.Inclusion, fail(err))
			continue
		}
		if err := tlog.CheckRecord(tlog.RecordProof(proof), c.Size, c.hash, item.Index, tlog.RecordHash(entry)); err != nil {
			ans.Inclusion = append(ans.Inclusion, fail(err))
			continue
		}
		ans.Inclusion = append(ans.Inclusion, result{OK: true})
	}

	for _, item := range req.Consistency {
		old, err := tree(item.Old)
		if err != nil {
			ans.Consistency = append(ans.Consistency, fail(err))
			continue
		}
		newer, err := tree(item.New)
		if err != nil {
			ans.Consistency = append(ans.Consistency, fail(err))
			continue
		}
		if old.Origin != newer.Origin {
			ans.Consistency = append(ans.Consistency, fail(errors.New("the notes are of two logs")))
			continue
		}
		proof, err := hashes(item.Proof)
		if err != nil {
			ans.Consistency = append(ans.Consistency, fail(err))
			continue
		}
		if err := tlog.CheckTree(tlog.TreeProof(proof), newer.Size, newer.hash, old.Size, old.hash); err != nil {
			ans.Consistency = append(ans.Consistency, fail(err))
			continue
		}
		ans.Consistency = append(ans.Consistency, result{OK: true})
	}

	for _, pk := range req.PublicKeys {
		raw, err := base64.StdEncoding.DecodeString(pk.Key)
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkpoints: public key:", err)
			os.Exit(2)
		}
		vkey, err := note.NewEd25519VerifierKey(pk.Name, ed25519.PublicKey(raw))
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkpoints: public key:", err)
			os.Exit(2)
		}
		ans.VKeys = append(ans.VKeys, vkey)
	}

	for _, item := range req.Sign {
		signer, err := note.NewSigner(item.SKey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkpoints: signer key:", err)
			os.Exit(2)
		}
		signed, err := note.Sign(&note.Note{Text: item.Text}, signer)
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkpoints: signing:", err)
			os.Exit(2)
		}
		ans.Signed = append(ans.Signed, string(signed))
	}

	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(ans); err != nil {
		fmt.Fprintln(os.Stderr, "checkpoints: writing the answer:", err)
		os.Exit(2)
	}
}
