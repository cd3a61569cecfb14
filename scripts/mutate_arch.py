#!/usr/bin/env python3
"""Show that every architecture rule of internal/archtest can fail: break
each rule's check below in turn, run its tests (the real module and a
synthetic case that breaks the rule), and report whether they fail.
Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

ARCH = "./internal/archtest"

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("subject-literal-request-reply", "internal/archtest/subjects_test.go",
     "\t\treturn dot && name != \"\"\n", "\t\treturn dot && name != \"\" && false\n",
     [ARCH, "-run", "TestSubjectLiteralRuleFailsOnViolation"]),
    ("subject-literal-published", "internal/archtest/subjects_test.go",
     "\t\treturn slices.Contains(roots, root)\n", "\t\treturn slices.Contains(roots, root) && false\n",
     [ARCH, "-run", "TestSubjectLiteralRuleFailsOnViolation"]),
    ("link-rule-checks-packages", "internal/archtest/link_test.go",
     "\t\t\tif under(p, allowed...) {\n", "\t\t\tif under(p, allowed...) || true {\n",
     [ARCH, "-run", "RuleFailsOnViolation"]),
    ("client-links-no-nats-server", "internal/archtest/link_test.go",
     'var natsServerLinkers = append([]string{"bus/embedded"}, roots...)',
     'var natsServerLinkers = append([]string{"bus/embedded", "bus"}, roots...)',
     [ARCH, "-run", "TestNATSServerRuleFailsOnViolation"]),
    ("only-store-links-sqlite", "internal/archtest/link_test.go",
     'var sqliteLinkers = append([]string{"store"}, roots...)',
     'var sqliteLinkers = append([]string{"store", "api", "patrol"}, roots...)',
     [ARCH, "-run", "TestSQLiteRuleFailsOnViolation"]),
    ("internal-holds-leaves", "internal/archtest/layers_test.go",
     '\t\t\tif project(i) && !under(i, "internal", "contracts") {\n',
     '\t\t\tif project(i) && !under(i, "internal", "contracts") && false {\n',
     [ARCH, "-run", "TestInternalRuleFailsOnViolation"]),
    ("daemon-speaks-no-nats", "internal/archtest/layers_test.go",
     '\t\t\tif inTree(i, "github.com/nats-io/nats.go") {\n',
     '\t\t\tif inTree(i, "github.com/nats-io/nats.go") && false {\n',
     [ARCH, "-run", "TestDaemonNATSRuleFailsOnViolation"]),
    ("daemon-holds-no-replication", "internal/archtest/layers_test.go",
     "slices.Contains(methods, sel.Sel.Name)", 'slices.Contains(methods, "")',
     [ARCH, "-run", "TestDaemonReplicationRuleFailsOnViolation"]),
    ("daemon-fetches-no-seed", "internal/archtest/layers_test.go",
     'func clusterBehaviour() []string { return append(replicationMethods(), "FetchSeed") }',
     'func clusterBehaviour() []string { return replicationMethods() }',
     [ARCH, "-run", "TestDaemonReplicationRuleFailsOnViolation"]),
    ("cite-no-architecture-md", "internal/archtest/citations_test.go",
     "(?:ARCHITECTURE\\.md|BEHAVIOUR", "(?:ARCHITECTURE\\.mdx|BEHAVIOUR",
     [ARCH, "-run", "TestCitationRuleFailsOnViolation"]),
    ("cite-only-docs", "internal/archtest/citations_test.go",
     '\t\t\tif outsideDocs.MatchString(line) && !strings.Contains(line, "outsideDocs") {\n',
     '\t\t\tif outsideDocs.MatchString(line) && !strings.Contains(line, "outsideDocs") && false {\n',
     [ARCH, "-run", "TestCitationRuleFailsOnViolation"]),
    ("config-section-types-foreign", "internal/archtest/config_test.go",
     "\t\t\t\t\tif !rootScalar(fl.Type) && !foreign(fl.Type) {\n",
     "\t\t\t\t\tif !rootScalar(fl.Type) && !foreign(fl.Type) && false {\n",
     [ARCH, "-run", "TestConfigSectionRuleFailsOnViolation"]),
    ("config-declares-no-section", "internal/archtest/config_test.go",
     '\t\t\t\tif fl.Tag != nil && reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("koanf") != "" {\n',
     '\t\t\t\tif fl.Tag != nil && reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("koanf") == "-" {\n',
     [ARCH, "-run", "TestConfigSectionRuleFailsOnViolation"]),
    ("config-section-in-config", "config/config.go",
     "logging.Config        `koanf:\"log\"", "LogConfig             `koanf:\"log\"",
     [ARCH, "-run", "TestConfigOwnsNoSection$"]),
]

if __name__ == "__main__":
    run(MUTATIONS)
