// Package schedexpr parses and evaluates Amazon EventBridge Scheduler's
// schedule expressions in an IANA time zone: what localcron fires on one
// machine, what ebschedule checks before it puts a schedule, and what an
// account's posting slots are written in.
//
// # Expressions
//
// Parse accepts exactly the three forms of the Scheduler user guide, "Schedule
// types on EventBridge Scheduler"
// (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html),
// and the CreateSchedule API reference for ScheduleExpression:
//
//   - at(yyyy-mm-ddThh:mm:ss): one firing, a wall-clock time in the schedule's
//     time zone. Seconds are kept; no fraction, no offset; years 1970-2199
//     as in cron (the guide gives no range for at()).
//   - rate(value unit): value is a positive integer; unit is minute, minutes,
//     hour, hours, day or days (the API reference's list). The user guide
//     lists only the plurals and itself writes rate(1 days), so a plural is
//     accepted with any value; a singular only with value 1, since
//     rate(5 minute) is documented nowhere for Scheduler and is invalid in
//     EventBridge rules ("If the value is greater than 1, the unit must be
//     plural", eb-rate-expressions). Firings are at start + k·period, k ≥ 0,
//     with absolute periods: the guide says `days` "represents a 24-hour
//     duration on the clock", so rates ignore DST.
//   - cron(minutes hours day-of-month month day-of-week year): six fields,
//     Quartz-style, with the user guide's table of values and wildcards:
//     minutes 0-59 and hours 0-23 (, - * /), day-of-month 1-31 (, - * ? / L W),
//     month 1-12 or JAN-DEC (, - * /), day-of-week 1-7 = SUN-SAT (, - * ? L #),
//     year 1970-2199 (, - * /). Names and L/W are case-insensitive.
//
// Cron details, where the guide is silent, follow Quartz (from which the
// dialect comes) and real-world AWS usage:
//
//   - Exactly one of day-of-month and day-of-week is "?" ("If you specify a
//     value or a * (asterisk) in one of the fields, you must use a ? (question
//     mark) in the other"); "?" in both, or in neither, is an error.
//   - a-b with a > b wraps around (the EventBridge guide's own example
//     "0/30 20-2 ? * MON-FRI *"), except in the year field. a/n runs from a to
//     the field's maximum; */n starts at the field's minimum; a-b/n steps
//     through the range.
//     A step is 1-59 for minutes, 1-23 hours, 1-31 day-of-month, 1-12 month,
//     1-229 year; day-of-week has no "/".
//   - day-of-month: L is the last day; LW the last weekday (Mon-Fri); nW the
//     weekday nearest day n within the same month (a Saturday 1st gives Monday
//     the 3rd, a Sunday last day gives the Friday before), and no firing in a
//     month shorter than n days. day-of-week: L alone is Saturday (the last
//     day of the week); nL the last weekday n of the month; n#k the k-th (1-5)
//     weekday n, skipped in months that have none. L, LW, nW, nL and n#k stand
//     alone in their field (the guide: "If you use a '#' character, you can
//     define only one expression in the day-of-week field"); L-n offsets are
//     not supported.
//   - Whitespace separates fields; nothing may precede "cron(" or follow ")".
//     Expressions are at most 256 bytes (the API's limit).
//
// Errors are *ExprError values that name the offending field and token, e.g.
// `cron(0 25 * * ? *): hours field: "25" is out of range 0-23`. An unknown
// time zone gives `unknown timezone "Mars/Base"`; the empty time zone is UTC,
// as in the API. Zone data comes from the system or from time/tzdata, which
// the main package should import on hosts without /usr/share/zoneinfo.
//
// # Daylight saving time
//
// The schedule-types page says: "When time shifts forward in the Spring, if
// a cron expression falls on a non-existent date and time, your schedule
// invocation is skipped. When time shifts backwards in the Fall, your
// schedule runs only once and does not repeat its invocation." Its example,
// cron(30 2 * * ? *), "runs the schedule only once at 2:30 a.m. before the
// shift occurs". So a cron firing is a wall-clock time; one in the
// spring-forward gap does not fire at all (it is not moved to 3:30); one in the
// fall-back overlap fires once, at its first (daylight-time) occurrence, and
// not again when the clock repeats that hour. Rates are absolute (above).
// For at() the guide says nothing about a time that falls in a gap or an
// overlap. Here an overlap takes the first occurrence, like cron; a time in
// the gap is read with the offset in force before the jump, so it fires the
// length of the gap later (02:30 on a spring-forward night in New York fires
// at 03:30 EDT). A one-time schedule that never fired would lose a post
// (DESIGN G2).
//
// # Why no library
//
// None fits the AWS dialect and the documented DST rule:
// github.com/robfig/cron has no year field and no L, W or #;
// github.com/gorhill/cronexpr and aptible/supercronic's fork number
// day-of-week 0-6 from Sunday (AWS: 1-7), stop at year 2099 (AWS: 2199), do
// not enforce the "?" rule, are unmaintained, and their README calls the
// behaviour on a malformed expression undetermined ("most likely, code will
// panic"); github.com/winebarrel/cronplan parses the AWS dialect but its
// Next is inclusive (not strictly after), builds times with time.Date
// (which moves a gap time instead of skipping it and picks an arbitrary
// occurrence in an overlap), and pulls in the participle parser library.
// The evaluator here is small: fields are bit sets and
// Next steps year → month → day → hour → minute by bit scans, never minute by
// minute.
package schedexpr
