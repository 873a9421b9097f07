package jobspec

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Options are the inputs of a parse besides the job file itself.
type Options struct {
	// Vars are -var name=value inputs; they win over everything else.
	Vars map[string]string
	// VarFiles are HCL files of name = value pairs (-var-file), applied in
	// order after the environment and before Vars.
	VarFiles []string
	// VarText is var-file content applied after VarFiles (the Variables
	// field of POST /v1/jobs/parse); diagnostics name it "<variables>".
	VarText string
	// Env is the environment scanned for DROVER_VAR_name and NOMAD_VAR_name;
	// nil means os.Environ().
	Env []string
	// BaseDir is the directory file() and fileexists() resolve against and
	// may not escape; empty means the job file's directory.
	BaseDir string
	// NoDefaults skips Canonicalize: the job is returned as written. Checks
	// that need defaults (api.Job.Validate) are skipped too.
	NoDefaults bool
	// Namespace is the namespace of a job whose file names none (the
	// CLI's -namespace); empty means the default namespace.
	Namespace string
	// Warn, when set, receives a warning for each item of Nomad's grammar
	// that drover accepts but does not run yet (it is ignored), after a
	// successful parse.
	Warn func(Diagnostic)
}

// Diagnostic is one problem found in a job file.
type Diagnostic struct {
	File    string
	Line    int
	Column  int
	Message string
}

func (d Diagnostic) String() string {
	if d.File == "" && d.Line == 0 {
		return d.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Message)
}

// Diagnostics is the error Parse returns: every problem found, one per
// line as file:line:col: message. errors.Is(err, api.ErrInvalidJob) holds.
type Diagnostics []Diagnostic

func (ds Diagnostics) Error() string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, api.ErrInvalidJob) true.
func (ds Diagnostics) Unwrap() error { return api.ErrInvalidJob }

// ParseFile reads and parses one job file. A file over MaxSourceBytes is
// a Diagnostics error, found without reading it whole.
func ParseFile(path string, opts *Options) (*api.Job, error) {
	src, d, err := readSource(path)
	if err != nil {
		return nil, fmt.Errorf("read job file: %w", err)
	}
	if d != nil {
		p := &parser{filename: path, diags: hcl.Diagnostics{d}}
		return nil, p.diagnostics()
	}
	return Parse(path, src, opts)
}

// Parse parses a job file's contents; filename is used in diagnostics and,
// unless opts.BaseDir is set, to locate files read by file(). Sources over
// the limits (MaxSourceBytes, MaxNestingDepth, MaxOperators, MaxTokens)
// are Diagnostics errors before the HCL parser sees them.
func Parse(filename string, src []byte, opts *Options) (*api.Job, error) {
	if opts == nil {
		opts = &Options{}
	}
	p := &parser{filename: filename, src: src, opts: opts, budget: newBudget()}
	p.baseDir = opts.BaseDir
	if p.baseDir == "" {
		p.baseDir = filepath.Dir(filename)
	}
	job := p.parse()
	p.diags = p.budget.tidy(p.diags)
	if len(p.diags) > 0 {
		return nil, p.diagnostics()
	}
	if errs := finish(job, opts); len(errs) > 0 {
		p.addValidation(errs)
		return nil, p.diagnostics()
	}
	if opts.Warn != nil {
		for _, w := range collect(p.warns, hcl.DiagWarning) {
			opts.Warn(w)
		}
	}
	return job, nil
}

type parser struct {
	filename string
	src      []byte
	opts     *Options
	baseDir  string
	diags    hcl.Diagnostics
	warns    hcl.Diagnostics
	jobRange hcl.Range
	d        *decoder
	budget   *budget // what the job's functions and expressions may build
}

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "job", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "variables"},
		{Type: "locals"},
	},
}

func (p *parser) parse() *api.Job {
	if d := checkSource(p.filename, p.src); d != nil {
		p.diags = append(p.diags, d)
		return nil
	}
	file, diags := hclsyntax.ParseConfig(p.src, p.filename, hcl.InitialPos)
	p.diags = append(p.diags, diags...)
	if diags.HasErrors() {
		return nil
	}
	boundJobFile(file.Body.(*hclsyntax.Body))
	content, diags := file.Body.Content(rootSchema)
	p.diags = append(p.diags, diags...)

	var jobs, vars, locals hcl.Blocks
	for _, b := range content.Blocks {
		switch b.Type {
		case "job":
			jobs = append(jobs, b)
		case "variable", "variables":
			vars = append(vars, b)
		case "locals":
			locals = append(locals, b)
		}
	}
	ctx := p.evalContext(vars, locals)
	p.d = &decoder{src: p.src, ctx: ctx, diags: &p.diags, warns: &p.warns}
	switch len(jobs) {
	case 0:
		p.diags = append(p.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Missing job block",
			Detail:  "A job file needs exactly one job block.",
			Subject: &hcl.Range{Filename: p.filename, Start: hcl.InitialPos, End: hcl.InitialPos},
		})
		return nil
	case 1:
	default:
		for _, b := range jobs[1:] {
			p.diags = append(p.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Duplicate job block",
				Detail: fmt.Sprintf("Only one job block is allowed; the first is at %s.", jobs[0].DefRange), Subject: b.DefRange.Ptr(),
			})
		}
	}
	p.jobRange = jobs[0].DefRange
	return p.d.job(jobs[0])
}

// finish gives a parsed job opts' namespace where it names none and,
// unless opts.NoDefaults, the defaults; it returns api.Job.Validate's
// problems one by one.
func finish(job *api.Job, opts *Options) []error {
	if job.Namespace == "" {
		job.Namespace = opts.Namespace
	}
	if opts.NoDefaults {
		return nil
	}
	job.Canonicalize()
	err := job.Validate()
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// addValidation turns validation problems into diagnostics at the job
// block.
func (p *parser) addValidation(errs []error) {
	for _, e := range errs {
		p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: e.Error(), Subject: p.jobRange.Ptr()})
	}
}

func (p *parser) diagnostics() Diagnostics {
	out := collect(p.diags, hcl.DiagError)
	if len(out) == 0 {
		out = append(out, Diagnostic{File: p.filename, Message: "invalid job"})
	}
	return out
}

// collect turns the diagnostics of one severity into Diagnostics, without
// duplicates, in file order.
func collect(diags hcl.Diagnostics, sev hcl.DiagnosticSeverity) Diagnostics {
	out := make(Diagnostics, 0, len(diags))
	seen := make(map[string]bool, len(diags))
	for _, d := range diags {
		if d.Severity != sev {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		msg = strings.ReplaceAll(msg, "\n", " ")
		var dg Diagnostic
		dg.Message = msg
		if d.Subject != nil {
			dg.File, dg.Line, dg.Column = d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
		}
		if k := dg.String(); !seen[k] {
			seen[k] = true
			out = append(out, dg)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return out
}

// errorf records an error diagnostic at r.
func errorf(diags *hcl.Diagnostics, r hcl.Range, format string, a ...any) {
	*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(format, a...), Subject: r.Ptr()})
}

var _ error = Diagnostics(nil)
