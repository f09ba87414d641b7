// Package sqsqueue is the publishing.Queue and publishing.DeadLetterAdmin
// ports on Amazon SQS (DESIGN §6): a standard queue and its dead-letter
// queue, through aws-sdk-go-v2's service/sqs. It passes
// publishingtest.TestQueue against fauxqs (shared/emulatortest).
//
// # Messages on the wire
//
// A message's id is the adapter's own (32 hex digits), carried in the
// message attribute oncepost.id, not SQS's MessageId: Redrive sends a dead
// letter back as a new SQS message, and the port wants it to keep its id.
// A message another program sent without the attribute is known by its SQS
// MessageId.
//
// Bodies are bytes; SQS bodies are XML-safe Unicode text. A body that is
// valid UTF-8 of characters SQS accepts travels as is; any other body
// (binary, NUL bytes, invalid UTF-8) travels base64-encoded with the
// attribute oncepost.encoding = "base64". A body of
// publishing.MaxMessageBytes then takes 349,528 bytes, so both queues need
// a MaximumMessageSize of at least MinQueueMessageSize (SQS allows 1 MiB,
// the default for new queues). SQS refuses an empty body, and so does
// Send (ErrEmptyBody).
//
// A dead letter is a copy of the message in the dead-letter queue with
// the attributes oncepost.reason, oncepost.receive_count,
// oncepost.dead_lettered_at (RFC 3339, UTC) and oncepost.source (the
// source queue's account/name, so that one dead-letter queue may serve
// several queues: each lists, redrives and drops only its own).
//
// # What SQS does and what the adapter does
//
// Send, Receive (short poll), Retry (ChangeMessageVisibility) and Ack
// (DeleteMessage) are one SQS call each, except that Ack first calls
// ChangeMessageVisibility on the receipt: SQS's DeleteMessage succeeds
// for a receipt of an earlier delivery (without deleting anything), and
// the port wants that refused (ErrStaleReceipt).
//
// A message delivered too often is dead-lettered by whichever comes first:
// the queue's RedrivePolicy (SQS moves it when a receive would exceed
// maxReceiveCount; recommended, and needed by any consumer that is not
// this adapter, such as a Lambda event source mapping), or Receive itself
// when Options.MaxReceives is set (it moves the delivery that would exceed
// it, with a reason). A message SQS moved has no reason attribute:
// DeadLetters names the cause from the source queue's RedrivePolicy, and
// its At is when it was first sent (SQS records no time for the move).
//
// DeadLetter, and Receive's own moves, send the copy to the dead-letter
// queue first and delete the delivery second. A crash in between leaves
// the message in both queues: it is delivered again, and may be
// dead-lettered again; DeadLetters lists copies with one id once, and
// Redrive and Drop act on every copy. A message is never lost.
//
// SQS has no peek. DeadLetters, Redrive and Drop receive every message of
// the dead-letter queue (up to Options.ScanLimit) with a 30 s visibility
// timeout, then make the ones they keep visible again at once. While one
// of them runs, another sees a partial dead-letter queue; the
// dead-letter queue must have no RedrivePolicy of its own (each scan
// counts as a receive).
//
// # Queue attributes
//
// The SDK omits zero-valued optional parameters, so the queue's own
// defaults apply where the adapter means zero: the queue's DelaySeconds and
// ReceiveMessageWaitTimeSeconds must be 0 (SQS's defaults) for Send to be
// immediate and Receive not to block. Check verifies this and the rest.
// Receive hides messages for at least one second for the same reason.
package sqsqueue
