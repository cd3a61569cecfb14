package proxmox

import (
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// TestCertificatesNameTheField: a certificate entry of the wrong type
// names its index and field; PVE 7's strings read as numbers; the first
// to expire is kept, one without an expiry skipped.
func TestCertificatesNameTheField(t *testing.T) {
	_, err := decodeList[certificateInfo]([]byte(`[{"filename":"a.pem","notafter":1},{"filename":"b.pem","notafter":{}}]`))
	if want := "data[1].notafter: must be a number, got {}"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	certs, err := decodeList[certificateInfo]([]byte(`[{"filename":"pve-ssl.pem","subject":"/CN=a","notafter":"1859018400"},` +
		`{"filename":"pveproxy-ssl.pem","subject":"/CN=b","notafter":1797674400},{"filename":"x.pem","notafter":""}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := &snapshot.Certificate{File: "pveproxy-ssl.pem", Subject: "/CN=b", NotAfter: time.Unix(1797674400, 0).UTC()}
	if got := firstToExpire(certs); !reflect.DeepEqual(got, want) {
		t.Errorf("first to expire %+v, want %+v", got, want)
	}
	if got := firstToExpire(nil); got != nil {
		t.Errorf("no certificates: %+v", got)
	}
}

// FuzzCertificates: any certificates answer that decodes maps to a node
// the snapshot contract accepts.
func FuzzCertificates(f *testing.F) {
	seedData(f, "nodes/pve1/certificates/info.json", "nodes/pve2/certificates/info.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := decodeList[certificateInfo](data)
		if err != nil {
			return
		}
		r := nodeResource(clusterResource{Node: "pve1", Status: "online"}, nil)
		r.Certificate = firstToExpire(certs)
		valid(t, []snapshot.Resource{r})
	})
}
