package dynamostore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"oncepost/shared/credseal"
)

// DataKeys makes and unwraps the data key that seals credentials
// (envelope encryption). The store keeps the wrapped key in its workspace
// table, asks for a new one once (the first credential stored), and
// unwraps it once per process, on the first credential read or write:
// every credential value is then sealed and opened locally (credseal,
// AES-256-GCM, the account and field as additional data), with no call to
// the key service.
type DataKeys interface {
	// NewDataKey returns a new credseal.KeySize-byte key and its wrapped
	// form, which is what the store keeps.
	NewDataKey(ctx context.Context) (plain, wrapped []byte, err error)
	// OpenDataKey unwraps a key NewDataKey wrapped.
	OpenDataKey(ctx context.Context, wrapped []byte) ([]byte, error)
	// Name says which key wraps, for errors (never a secret).
	Name() string
}

// KMS is the part of the KMS client KMSKeys calls; *kms.Client
// implements it.
type KMS interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ KMS = (*kms.Client)(nil)

// KMSKeys wraps the credentials' data key with a KMS key: GenerateDataKey
// (AES_256) once when the first credential is stored, Decrypt once per
// process (a Lambda cold start).
//
// KMS rather than Secrets Manager, and envelope encryption rather than a
// KMS call per value:
//   - A publish reads the account's credential. Secrets Manager would
//     charge $0.05 per 10,000 reads ($5 per 1M publishes) and KMS Decrypt
//     per value $0.03 per 10,000 ($3 per 1M), each over the $2 per 1M
//     posts budget; a data key unwrapped once per cold start costs
//     nothing per publish.
//   - The refresh lease and the tokens must change in one conditional
//     write (SaveRefreshed stores the rotated token only while its owner
//     holds the lease, and drops the lease). Secrets Manager has no
//     conditional writes; a DynamoDB item has, so the sealed tokens live
//     in the credentials table next to the lease.
//   - Secrets Manager also costs $0.40 per secret a month: per account.
//
// The key policy decides who may Decrypt: a copy of the tables without
// kms:Decrypt on the key holds no usable token.
type KMSKeys struct {
	Client KMS
	// KeyID is the KMS key (id, ARN or alias) that wraps the data key.
	KeyID string
	// Context is the encryption context bound to the wrapped key (logged
	// by CloudTrail with every Decrypt); default
	// {"oncepost": "credentials"}. It must not change once a key is
	// wrapped.
	Context map[string]string
}

func (k KMSKeys) encryptionContext() map[string]string {
	if len(k.Context) > 0 {
		return k.Context
	}
	return map[string]string{"oncepost": "credentials"}
}

// Name is "KMS key <KeyID>".
func (k KMSKeys) Name() string { return "KMS key " + k.KeyID }

// NewDataKey calls KMS GenerateDataKey (AES_256).
func (k KMSKeys) NewDataKey(ctx context.Context) (plain, wrapped []byte, err error) {
	out, err := k.Client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId: &k.KeyID, KeySpec: kmstypes.DataKeySpecAes256, EncryptionContext: k.encryptionContext(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("generate data key with %s: %w", k.Name(), err)
	}
	if len(out.Plaintext) != credseal.KeySize || len(out.CiphertextBlob) == 0 {
		return nil, nil, fmt.Errorf("generate data key with %s: got a %d-byte key, want %d", k.Name(), len(out.Plaintext), credseal.KeySize)
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// OpenDataKey calls KMS Decrypt, naming the key (a wrapped key of
// another KMS key is refused by KMS rather than decrypted with it).
func (k KMSKeys) OpenDataKey(ctx context.Context, wrapped []byte) ([]byte, error) {
	out, err := k.Client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob: wrapped, KeyId: &k.KeyID, EncryptionContext: k.encryptionContext(),
	})
	if err != nil {
		return nil, fmt.Errorf("decrypt data key with %s: %w", k.Name(), err)
	}
	if len(out.Plaintext) != credseal.KeySize {
		return nil, fmt.Errorf("decrypt data key with %s: got a %d-byte key, want %d", k.Name(), len(out.Plaintext), credseal.KeySize)
	}
	return out.Plaintext, nil
}

// StaticKey is a DataKeys for tests and local runs: the key itself is the
// data key, and the "wrapped" form only names it (a hash), so a store
// opened with another StaticKey is refused instead of misreading.
type StaticKey []byte

// NewStaticKey returns a random StaticKey.
func NewStaticKey() StaticKey {
	k := make(StaticKey, credseal.KeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	return k
}

func (k StaticKey) tag() []byte {
	sum := sha256.Sum256(append([]byte("oncepost static data key\x00"), k...))
	return []byte("static:" + hex.EncodeToString(sum[:8]))
}

// Name is "static key <hash prefix>".
func (k StaticKey) Name() string { return "static key " + string(k.tag()[len("static:"):]) }

// NewDataKey returns the key and its tag.
func (k StaticKey) NewDataKey(context.Context) (plain, wrapped []byte, err error) {
	if len(k) != credseal.KeySize {
		return nil, nil, fmt.Errorf("static key has %d bytes, want %d", len(k), credseal.KeySize)
	}
	return bytes.Clone(k), k.tag(), nil
}

// OpenDataKey returns the key if wrapped is its tag.
func (k StaticKey) OpenDataKey(_ context.Context, wrapped []byte) ([]byte, error) {
	if !bytes.Equal(wrapped, k.tag()) {
		return nil, fmt.Errorf("the stored data key is not %s (%q)", k.Name(), wrapped)
	}
	return bytes.Clone(k), nil
}

// ErrNoDataKeys is returned (wrapped) by the credential methods of a Store
// opened without Options.Keys.
var ErrNoDataKeys = errors.New("no data key source (Options.Keys) to seal credentials with")

// errNoDataKey: no data key is stored yet (so no credential was sealed).
var errNoDataKey = errors.New("no data key stored")

// The data key's item in the workspace table.
var dataKeyKey = item{attrPK: str(pkConfig), attrSK: str("credential-data-key")}

// sealer returns the credentials' sealer, made on first use from the
// stored data key (unwrapped by s.keys); with create, a data key is made
// and stored if there is none (a conditional put: concurrent first
// writers agree on the one stored first).
func (s *Store) sealer(ctx context.Context, create bool) (*credseal.Sealer, error) {
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	if s.seal != nil {
		return s.seal, nil
	}
	if s.keys == nil {
		return nil, ErrNoDataKeys
	}
	stored, err := s.getItem(ctx, s.tables.workspace, dataKeyKey)
	if err != nil {
		return nil, fmt.Errorf("read the data key: %w", err)
	}
	var plain []byte
	if stored == nil {
		if !create {
			return nil, errNoDataKey
		}
		p, wrapped, err := s.keys.NewDataKey(ctx)
		if err != nil {
			return nil, err
		}
		it := item{attrPK: dataKeyKey[attrPK], attrSK: dataKeyKey[attrSK],
			"wrapped": &types.AttributeValueMemberB{Value: wrapped}, "wrapped_by": str(s.keys.Name()),
			"created_at": str(encTime(s.now()))}
		var x expr
		cond := fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPK))
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond, ExpressionAttributeNames: x.names,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		old, lost := conditionFailed(err)
		switch {
		case lost && old != nil:
			stored = old
		case lost:
			if stored, err = s.getItem(ctx, s.tables.workspace, dataKeyKey); err != nil || stored == nil {
				return nil, fmt.Errorf("read the data key another writer stored: %v", err)
			}
		case err != nil:
			return nil, fmt.Errorf("store the data key: %w", err)
		default:
			plain = p
		}
	}
	if plain == nil {
		b, ok := stored["wrapped"].(*types.AttributeValueMemberB)
		if !ok {
			return nil, errors.New("the stored data key item has no wrapped key")
		}
		if plain, err = s.keys.OpenDataKey(ctx, b.Value); err != nil {
			return nil, err
		}
	}
	seal, err := credseal.New(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	s.seal = seal
	return seal, nil
}
