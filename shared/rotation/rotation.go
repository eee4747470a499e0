// Package rotation rotates the webhook's token: the Secrets Manager rotation
// function's four steps (createSecret, setSecret, testSecret, finishSecret)
// for a secret whose value is a random string of letters and digits.
//
// It exists so that the token changes on a schedule without anyone at the
// keyboard. Secrets Manager keeps the replaced value as AWSPREVIOUS, and the
// webhook accepts both AWSCURRENT and AWSPREVIOUS: the cluster's registration,
// which still carries the value it was applied with, keeps working for one
// whole rotation period after a rotation, and `nodewright webhook apply`
// moves it to the current value within that period. Each step is idempotent
// (Secrets Manager retries a failed step).
package rotation

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/nodewright/nodewright/shared/logging"
)

// Version stages.
const (
	StageCurrent = "AWSCURRENT"
	StagePending = "AWSPENDING"
)

// Rotation steps, as Secrets Manager names them.
const (
	StepCreate = "createSecret"
	StepSet    = "setSecret"
	StepTest   = "testSecret"
	StepFinish = "finishSecret"
)

// TokenLength and TokenAlphabet make a token: 64 letters and digits (about
// 381 bits), the kind the stack's secret is generated with.
const (
	TokenLength   = 64
	TokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// SecretsManagerAPI is the part of the Secrets Manager API rotation uses.
type SecretsManagerAPI interface {
	DescribeSecret(context.Context, *secretsmanager.DescribeSecretInput, ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error)
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	PutSecretValue(context.Context, *secretsmanager.PutSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	UpdateSecretVersionStage(context.Context, *secretsmanager.UpdateSecretVersionStageInput, ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error)
}

// Handler runs the rotation steps.
type Handler struct {
	Client SecretsManagerAPI
	Log    *slog.Logger
	// Token makes a new token (nil: NewToken).
	Token func() (string, error)
}

// Handle runs one step of a rotation.
func (h *Handler) Handle(ctx context.Context, ev events.SecretsManagerSecretRotationEvent) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rotation %s: panic: %v", ev.Step, r)
		}
		if err != nil {
			h.Log.Error("rotation step failed", "step", logging.Quote(ev.Step), "error", logging.Err(err))
		}
	}()
	if ev.SecretID == "" || ev.ClientRequestToken == "" {
		return errors.New("rotation event without SecretId or ClientRequestToken")
	}
	desc, err := h.Client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(ev.SecretID)})
	if err != nil {
		return fmt.Errorf("describe secret: %w", err)
	}
	if !aws.ToBool(desc.RotationEnabled) {
		return errors.New("rotation is not enabled on the secret")
	}
	stages, ok := desc.VersionIdsToStages[ev.ClientRequestToken]
	if !ok {
		return fmt.Errorf("version %s is not a version of the secret", logging.Quote(ev.ClientRequestToken))
	}
	if slices.Contains(stages, StageCurrent) {
		h.Log.Info("the version is already current", "step", ev.Step)
		return nil
	}
	if !slices.Contains(stages, StagePending) {
		return fmt.Errorf("version %s is not pending", logging.Quote(ev.ClientRequestToken))
	}
	log := h.Log.With("step", ev.Step, "version", ev.ClientRequestToken)
	switch ev.Step {
	case StepCreate:
		return h.create(ctx, ev, log)
	case StepSet:
		// The webhook reads the secret itself; the cluster's registration
		// moves with `nodewright webhook apply` during the overlap.
		log.Info("nothing to set: the webhook accepts the current and the previous token")
		return nil
	case StepTest:
		v, err := h.pending(ctx, ev)
		if err != nil {
			return err
		}
		if err := Check(v); err != nil {
			return fmt.Errorf("pending token: %w", err)
		}
		log.Info("pending token is well formed")
		return nil
	case StepFinish:
		return h.finish(ctx, ev, desc, log)
	default:
		return fmt.Errorf("unknown rotation step %s", logging.Quote(ev.Step))
	}
}

// create puts a new pending value, unless the pending version has one.
func (h *Handler) create(ctx context.Context, ev events.SecretsManagerSecretRotationEvent, log *slog.Logger) error {
	if _, err := h.pending(ctx, ev); err == nil {
		log.Info("the pending version has its value already")
		return nil
	} else if !isNotFound(err) {
		return err
	}
	mint := h.Token
	if mint == nil {
		mint = NewToken
	}
	tok, err := mint()
	if err != nil {
		return err
	}
	in := &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(ev.SecretID), ClientRequestToken: aws.String(ev.ClientRequestToken),
		SecretString: aws.String(tok), VersionStages: []string{StagePending},
	}
	if ev.RotationToken != "" {
		in.RotationToken = aws.String(ev.RotationToken)
	}
	if _, err := h.Client.PutSecretValue(ctx, in); err != nil {
		return fmt.Errorf("put pending value: %w", err)
	}
	log.Info("new token created")
	return nil
}

// finish makes the pending version current; Secrets Manager marks the one
// it replaces AWSPREVIOUS.
func (h *Handler) finish(ctx context.Context, ev events.SecretsManagerSecretRotationEvent, desc *secretsmanager.DescribeSecretOutput, log *slog.Logger) error {
	var current string
	for id, stages := range desc.VersionIdsToStages {
		if slices.Contains(stages, StageCurrent) {
			current = id
		}
	}
	in := &secretsmanager.UpdateSecretVersionStageInput{
		SecretId: aws.String(ev.SecretID), VersionStage: aws.String(StageCurrent), MoveToVersionId: aws.String(ev.ClientRequestToken),
	}
	if current != "" {
		in.RemoveFromVersionId = aws.String(current)
	}
	if _, err := h.Client.UpdateSecretVersionStage(ctx, in); err != nil {
		return fmt.Errorf("make the pending version current: %w", err)
	}
	log.Info("rotated: the cluster's registration carries the previous token until `nodewright webhook apply`", "previousVersion", current)
	return nil
}

func (h *Handler) pending(ctx context.Context, ev events.SecretsManagerSecretRotationEvent) (string, error) {
	out, err := h.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(ev.SecretID), VersionId: aws.String(ev.ClientRequestToken), VersionStage: aws.String(StagePending),
	})
	if err != nil {
		return "", fmt.Errorf("get pending value: %w", err)
	}
	return aws.ToString(out.SecretString), nil
}

func isNotFound(err error) bool {
	var nf *smtypes.ResourceNotFoundException
	return errors.As(err, &nf)
}

// NewToken returns TokenLength characters of TokenAlphabet drawn uniformly
// from crypto/rand.
func NewToken() (string, error) {
	b := make([]byte, TokenLength)
	n := big.NewInt(int64(len(TokenAlphabet)))
	for i := range b {
		x, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", fmt.Errorf("new token: %w", err)
		}
		b[i] = TokenAlphabet[x.Int64()]
	}
	return string(b), nil
}

// Check says whether v is a token NewToken could have made.
func Check(v string) error {
	if len(v) != TokenLength {
		return fmt.Errorf("%d characters, want %d", len(v), TokenLength)
	}
	for _, c := range []byte(v) {
		if !slices.Contains([]byte(TokenAlphabet), c) {
			return errors.New("a character outside letters and digits")
		}
	}
	return nil
}
