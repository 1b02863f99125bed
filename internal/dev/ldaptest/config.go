package ldaptest

import (
	"fmt"
	"strings"
)

// schemaDir holds the schemas Debian's slapd package ships as LDIF.
const schemaDir = "/etc/ldap/schema"

// configLDIF is the server's cn=config, loaded by slapadd -n0. The config
// database has no root DN, so nothing over LDAP can read or change it. In
// the suffix's database a password is only ever compared (bind) or changed
// by its owner; the rest is readable by any bound or anonymous client, as an
// application's directory usually is to its sync account.
func configLDIF(dir, suffix, rootDN, rootPW string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: %[1]s/slapd.pid
olcArgsFile: %[1]s/slapd.args
olcLogLevel: none

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

`, dir)
	for _, s := range []string{"core", "cosine", "nis", "inetorgperson"} {
		fmt.Fprintf(&b, "include: file://%s/%s.ldif\n\n", schemaDir, s)
	}
	fmt.Fprintf(&b, `dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcDbDirectory: %s/data
olcSuffix: %s
olcRootDN: %s
olcRootPW: %s
olcDbMaxSize: 268435456
olcDbNoSync: TRUE
olcAccess: {0}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {1}to * by * read
`, dir, suffix, rootDN, rootPW)
	return b.String()
}
