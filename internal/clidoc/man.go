package clidoc

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
)

// ManPages renders the program's man pages (section 1): PROGRAM.1 with the
// commands and exit statuses, and PROGRAM-COMMAND.1 per command with its
// synopses, description and flags. File name → troff source. The pages
// carry no date, so the same program writes the same pages.
func (p *Program) ManPages() map[string][]byte {
	pages := map[string][]byte{p.Name + ".1": p.manTop()}
	for i := range p.Commands {
		pages[p.Name+"-"+p.Commands[i].Name+".1"] = p.manCommand(&p.Commands[i])
	}
	return pages
}

// manPage is a page under construction.
type manPage struct{ bytes.Buffer }

func (m *manPage) header(p *Program, name, summary string) {
	fmt.Fprintf(m, ".TH %s 1 \"\" \"%s %s\" \"%s manual\"\n", roffText(strings.ToUpper(name)), roffText(p.Name), roffText(p.Version), roffText(p.Name))
	fmt.Fprintf(m, ".SH NAME\n%s \\- %s\n", roffText(name), roffText(summary))
}

func (m *manPage) section(title string) { fmt.Fprintf(m, ".SH %s\n", roffQuote(title)) }

// text writes paragraphs (blank-line separated) as filled text; lines
// indented in the source stay as they are.
func (m *manPage) text(s string) {
	for i, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if i > 0 {
			m.WriteString(".PP\n")
		}
		verbatim := false
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, " ") != verbatim {
				verbatim = !verbatim
				m.WriteString(map[bool]string{true: ".nf\n", false: ".fi\n"}[verbatim])
			}
			m.WriteString(roffLine(l) + "\n")
		}
		if verbatim {
			m.WriteString(".fi\n")
		}
	}
}

// sentence is a summary as the first sentence of a paragraph.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// synopsis writes "PROGRAM PATH SYNOPSIS".
func (m *manPage) synopsis(prog, path, synopsis string) {
	fmt.Fprintf(m, ".B %s\n", roffText(strings.TrimSpace(prog+" "+path)))
	m.WriteString(roffLine(strings.Join(strings.Fields(synopsis), " ")) + "\n")
}

// options writes a flag set as a tagged list.
func (m *manPage) options(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, placeholder, usage, def := Flag(f)
		m.WriteString(".TP\n")
		fmt.Fprintf(m, "\\fB%s\\fR", roffText(name))
		if placeholder != "" {
			fmt.Fprintf(m, " \\fI%s\\fR", roffText(placeholder))
		}
		m.WriteString("\n" + roffLine(usage))
		if def != "" {
			m.WriteString(" (default " + roffText(def) + ")")
		}
		m.WriteString("\n")
	})
}

func (p *Program) manTop() []byte {
	var m manPage
	m.header(p, p.Name, p.Summary)
	m.section("SYNOPSIS")
	m.synopsis(p.Name, "", p.Synopsis)
	m.section("DESCRIPTION")
	m.text(p.Description)
	m.section("COMMANDS")
	for _, c := range p.Commands {
		fmt.Fprintf(&m, ".TP\n.BR %s\\-%s (1)\n%s\n", roffText(p.Name), roffText(c.Name), roffLine(c.Summary))
	}
	m.section("EXIT STATUS")
	for _, e := range p.ExitStatus {
		fmt.Fprintf(&m, ".TP\n.B %d\n%s\n", e.Code, roffLine(e.Meaning))
	}
	for _, s := range []struct {
		title string
		l     []Entry
	}{{"ENVIRONMENT", p.Environment}, {"FILES", p.Files}} {
		if len(s.l) == 0 {
			continue
		}
		m.section(s.title)
		for _, e := range s.l {
			fmt.Fprintf(&m, ".TP\n.B %s\n%s\n", roffText(e.Name), roffLine(e.Meaning))
		}
	}
	m.section("SEE ALSO")
	var see []string
	for _, c := range p.Commands {
		see = append(see, ".BR "+roffText(p.Name)+"\\-"+roffText(c.Name)+" (1)")
	}
	m.WriteString(strings.Join(see, " ,\n") + "\n")
	return m.Bytes()
}

func (p *Program) manCommand(c *Command) []byte {
	var m manPage
	m.header(p, p.Name+"-"+c.Name, c.Summary)
	m.section("SYNOPSIS")
	if c.Subs == nil {
		m.synopsis(p.Name, c.Name, c.Synopsis)
	}
	for _, s := range c.Subs {
		m.synopsis(p.Name, c.Name+" "+s.Name, s.Synopsis)
		m.WriteString(".br\n")
	}
	m.section("DESCRIPTION")
	m.text(sentence(c.Summary))
	if c.Subs == nil {
		if c.Description != "" {
			m.WriteString(".PP\n")
			m.text(c.Description)
		}
		m.section("OPTIONS")
		m.options(c.Flags)
	}
	for _, s := range c.Subs {
		m.section(p.Name + " " + c.Name + " " + s.Name)
		m.text(sentence(s.Summary))
		if s.Description != "" {
			m.WriteString(".PP\n")
			m.text(s.Description)
		}
		m.WriteString(".PP\nOptions:\n")
		m.options(s.Flags)
	}
	m.section("EXIT STATUS")
	m.text("See " + p.Name + "(1).")
	m.section("SEE ALSO")
	m.WriteString(".BR " + roffText(p.Name) + " (1)\n")
	return m.Bytes()
}

// roffText escapes s for troff: backslashes, hyphens (so that flags
// copied from the page are ASCII) and non-ASCII characters as \[uXXXX],
// which groff and mandoc render whatever the input encoding.
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 127:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffLine is roffText for a text line: one that starts with a control
// character (. or ') is protected with \&.
func roffLine(s string) string {
	t := roffText(s)
	if strings.HasPrefix(t, ".") || strings.HasPrefix(t, "'") {
		t = `\&` + t
	}
	return t
}

// roffQuote quotes a macro argument.
func roffQuote(s string) string { return `"` + strings.ReplaceAll(roffText(s), `"`, `\(dq`) + `"` }
