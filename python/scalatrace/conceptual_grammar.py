"""A validator for coNCePTuaL programs (Scott Pakin's network-benchmark language, LANL).

Written for scalatrace from the published coNCePTuaL grammar (the language reference's
productions, version 1.5): a tokenizer that canonicalizes keywords the way the language does
(case-insensitive, singular/plural and ``a``/``an``, ``is``/``are`` synonyms) and an Earley
recognizer over the grammar below, so ambiguous and left-recursive productions are accepted as
written. It checks syntax only (no semantic checks such as undeclared variables).

Use :func:`validate` (raises :class:`ConceptualSyntaxError` with line and expected tokens) or
:func:`is_valid`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import ScalatraceError

__all__ = ["ConceptualSyntaxError", "Token", "tokenize", "validate", "is_valid", "GRAMMAR"]


class ConceptualSyntaxError(ScalatraceError, ValueError):
    """A coNCePTuaL program does not follow the grammar (message names line and token)."""


# Keyword synonyms: the spelling on the left is read as the canonical keyword on the right.
_SYNONYMS = {
    "A": "AN",
    "AWAIT": "AWAITS",
    "BIT": "BITS",
    "BUFFER": "BUFFERS",
    "BYTE": "BYTES",
    "COMPLETION": "COMPLETIONS",
    "COMPUTE": "COMPUTES",
    "DAY": "DAYS",
    "DOUBLEWORD": "DOUBLEWORDS",
    "EXECUTE": "EXECUTES",
    "HALFWORD": "HALFWORDS",
    "HOUR": "HOURS",
    "INTEGER": "INTEGERS",
    "IS": "ARE",
    "IT": "THEM",
    "ITS": "THEIR",
    "LOG": "LOGS",
    "MESSAGE": "MESSAGES",
    "MICROSECOND": "MICROSECONDS",
    "MILLISECOND": "MILLISECONDS",
    "MINUTE": "MINUTES",
    "MULTICAST": "MULTICASTS",
    "OUTPUT": "OUTPUTS",
    "PAGE": "PAGES",
    "PROCESSOR": "PROCESSORS",
    "QUADWORD": "QUADWORDS",
    "RECEIVE": "RECEIVES",
    "REPETITION": "REPETITIONS",
    "REDUCE": "REDUCES",
    "RESET": "RESETS",
    "RESTORE": "RESTORES",
    "RESULT": "RESULTS",
    "SECOND": "SECONDS",
    "SEND": "SENDS",
    "SLEEP": "SLEEPS",
    "STORE": "STORES",
    "SYNCHRONIZE": "SYNCHRONIZES",
    "TASK": "TASKS",
    "TIME": "TIMES",
    "TOUCH": "TOUCHES",
    "WORD": "WORDS",
}
_KEYWORDS = set(_SYNONYMS.values()) | set(
    """
ABS ABSOLUTE AGGREGATES ALIGNED ALL AND ARE ARITHMETIC AS ASSERT ASSIGNED ASYNCHRONOUSLY BACKEND BE
BUT CBRT CEILING COMES COUNTERS CURRENT DATA DECLARES DEFAULT DEVIATION DIVIDES EACH EVEN FACTOR10
FILE_DATA FINAL FLOOR FOR FROM GEOMETRIC GIGABYTE GREATER GROUP HARMONIC HISTOGRAM IF IN INTO
KILOBYTE KNOMIAL_CHILD KNOMIAL_CHILDREN KNOMIAL_PARENT LANGUAGE LESS LET LOG10 MAX MAXIMUM MEAN
MEDIAN MEGABYTE MEMORY MESH_COORDINATE MESH_DISTANCE MESH_NEIGHBOR MIN MINIMUM MISALIGNED MOD MY
NONUNIQUE NOT ODD OF OR OTHER OTHERWISE PERCENTILE PLUS PROCESSOR_OF RANDOM RANDOM_GAUSSIAN
RANDOM_PARETO RANDOM_POISSON RANDOM_UNIFORM REAL REGION REQUIRE ROOT ROUND SIZED SQRT STANDARD
STATIC_FILE_DATA STRIDE SUCH SUM SYNCHRONIZATION SYNCHRONOUSLY TAG TASK_OF THAN THAT THE THEIR
THEM THEN TO TOUCHING TREE_CHILD TREE_PARENT UNALIGNED UNIQUE UNSUSPECTING USING VALUE VARIANCE
VERIFICATION VERSION WARMUP WHERE WHILE WHO WITH WITHOUT XOR
""".split()
)

# Productions. Lower-case names are nonterminals or token classes (ident, integer, string,
# punctuation names); upper-case words are keywords; "<empty>" is the empty alternative.
GRAMMAR = r"""
program : <empty> | header_decl_list | top_level_stmt_list | header_decl_list top_level_stmt_list
top_level_stmt_list : top_level_stmt | top_level_stmt period
    | top_level_stmt top_level_stmt_list | top_level_stmt period top_level_stmt_list
header_decl_list : header_decl | header_decl period | header_decl header_decl_list
    | header_decl period header_decl_list
header_decl : param_decl | version_decl | backend_decl
param_decl : ident ARE string AND COMES FROM string OR string WITH DEFAULT expr
    | ident ARE string AND COMES FROM string WITH DEFAULT expr
version_decl : REQUIRE LANGUAGE VERSION string
backend_decl : THE BACKEND DECLARES string
top_level_stmt : simple_stmt_list
simple_stmt_list : simple_stmt | simple_stmt THEN simple_stmt_list
simple_stmt : send_stmt | mcast_stmt | receive_stmt | delay_stmt | wait_stmt | sync_stmt
    | touch_stmt | touch_buffer_stmt | log_stmt | log_flush_stmt | reset_stmt | store_stmt
    | restore_stmt | assert_stmt | output_stmt | backend_stmt | processor_stmt | reduce_stmt
    | FOR expr REPETITIONS simple_stmt
    | FOR expr REPETITIONS PLUS expr WARMUP REPETITIONS simple_stmt
    | FOR expr REPETITIONS PLUS expr WARMUP REPETITIONS AND AN SYNCHRONIZATION simple_stmt
    | FOR expr time_unit simple_stmt
    | FOR expr time_unit PLUS expr WARMUP time_unit simple_stmt
    | FOR expr time_unit PLUS expr WARMUP time_unit AND AN SYNCHRONIZATION simple_stmt
    | FOR EACH ident IN range_list simple_stmt
    | IF rel_expr THEN simple_stmt | IF rel_expr THEN simple_stmt OTHERWISE simple_stmt
    | LET let_binding_list WHILE simple_stmt
    | lbrace simple_stmt_list rbrace | lbrace rbrace
send_stmt : task_expr opt_async SENDS message_spec TO opt_unsusp task_expr
    | task_expr opt_async SENDS message_spec TO opt_unsusp task_expr WHO RECEIVES THEM recv_message_spec
mcast_stmt : task_expr opt_async MULTICASTS message_spec TO task_expr
receive_stmt : task_expr opt_async RECEIVES message_spec_into FROM task_expr
delay_stmt : task_expr COMPUTES FOR expr time_unit | task_expr SLEEPS FOR expr time_unit
wait_stmt : task_expr AWAITS COMPLETIONS
sync_stmt : task_expr SYNCHRONIZES
touch_stmt : task_expr TOUCHES expr data_type OF AN item_size MEMORY REGION touch_repeat_count stride
    | task_expr TOUCHES AN item_size MEMORY REGION touch_repeat_count stride
touch_buffer_stmt : task_expr TOUCHES ALL MESSAGES BUFFERS
    | task_expr TOUCHES THE CURRENT MESSAGES BUFFERS | task_expr TOUCHES MESSAGES BUFFERS expr
log_stmt : task_expr LOGS log_expr_list
log_flush_stmt : task_expr COMPUTES AGGREGATES
reset_stmt : task_expr RESETS THEIR COUNTERS
store_stmt : task_expr STORES THEIR COUNTERS
restore_stmt : task_expr RESTORES THEIR COUNTERS
assert_stmt : ASSERT THAT string WITH rel_expr
output_stmt : task_expr OUTPUTS string_or_expr_list
backend_stmt : task_expr BACKEND EXECUTES string_or_expr_list
processor_stmt : task_expr ARE ASSIGNED TO PROCESSORS expr
    | task_expr ARE ASSIGNED TO AN RANDOM PROCESSORS
reduce_stmt : task_expr REDUCES reduce_message_spec
    | task_expr REDUCES reduce_message_spec TO reduce_message_spec
    | task_expr REDUCES reduce_message_spec TO task_expr
    | task_expr REDUCES reduce_message_spec TO task_expr WHO RECEIVES THE RESULTS reduce_target_message_spec
rel_expr : rel_disj_expr
rel_disj_expr : rel_conj_expr | rel_disj_expr logic_or rel_conj_expr
rel_conj_expr : rel_primary_expr | rel_conj_expr logic_and rel_primary_expr
rel_primary_expr : eq_expr | lparen rel_expr rparen
eq_expr : expr op_eq expr | expr op_lt expr | expr op_gt expr | expr op_leq expr | expr op_geq expr
    | expr op_neq expr | expr DIVIDES expr | expr ARE EVEN | expr ARE ODD
    | expr ARE IN lbracket expr comma expr rbracket | expr ARE NOT IN lbracket expr comma expr rbracket
    | expr ARE IN range_list | expr ARE NOT IN range_list
aggregate_expr : expr | EACH expr | THE expr | THE aggregate_func_list expr
    | THE aggregate_func_list OF expr | THE aggregate_func_list OF THE expr
    | AN HISTOGRAM OF expr | AN HISTOGRAM OF THE expr
aggregate_func_list : aggregate_func | aggregate_func AND aggregate_func_list
    | aggregate_func AND THE aggregate_func_list
aggregate_func : MEAN | ARITHMETIC MEAN | HARMONIC MEAN | GEOMETRIC MEAN | MEDIAN
    | STANDARD DEVIATION | MEDIAN ABSOLUTE DEVIATION | VARIANCE | SUM | MINIMUM | MAXIMUM | FINAL
    | expr PERCENTILE
expr : ifelse_expr
ifelse_expr : add_expr | add_expr IF rel_expr OTHERWISE ifelse_expr
add_expr : mult_expr | add_expr op_plus mult_expr | add_expr op_minus mult_expr
    | add_expr op_or mult_expr | add_expr XOR mult_expr
mult_expr : unary_expr | mult_expr op_mult unary_expr | mult_expr op_div unary_expr
    | mult_expr MOD unary_expr | mult_expr op_rshift unary_expr | mult_expr op_lshift unary_expr
    | mult_expr op_and unary_expr
unary_expr : power_expr | unary_operator unary_expr
unary_operator : op_plus | op_minus | NOT
power_expr : primary_expr | primary_expr op_power unary_expr
primary_expr : lparen expr rparen | func_name lparen expr_list rparen | REAL lparen expr rparen
    | ident | integer | MY TASKS
    | MESH_NEIGHBOR lparen lparen dimension_list rparen comma expr comma lparen expr_list rparen rparen
    | MESH_COORDINATE lparen lparen dimension_list rparen comma expr comma expr rparen
    | MESH_DISTANCE lparen lparen dimension_list rparen comma expr comma expr rparen
    | FILE_DATA lparen string rparen | FILE_DATA lparen string comma expr rparen
    | FILE_DATA lparen string comma expr comma expr rparen
    | STATIC_FILE_DATA lparen string rparen | STATIC_FILE_DATA lparen string comma expr rparen
    | STATIC_FILE_DATA lparen string comma expr comma expr rparen
func_name : ABS | BITS | CBRT | CEILING | FACTOR10 | FLOOR | KNOMIAL_CHILD | KNOMIAL_CHILDREN
    | KNOMIAL_PARENT | LOG10 | MAX | MIN | PROCESSOR_OF | RANDOM_GAUSSIAN | RANDOM_PARETO
    | RANDOM_POISSON | RANDOM_UNIFORM | ROOT | ROUND | SQRT | TASK_OF | TREE_CHILD | TREE_PARENT
dimension_list : dimension | dimension comma dimension_list
dimension : expr | expr star
opt_an : <empty> | AN
opt_async : <empty> | ASYNCHRONOUSLY | SYNCHRONOUSLY
opt_unsusp : <empty> | UNSUSPECTING
unique : <empty> | UNIQUE | NONUNIQUE
tag : <empty> | USING TAG expr | USING TAG string
buffer_offset : <empty> | expr data_multiplier INTO
buffer_number : <empty> | FROM buffer_offset THE DEFAULT BUFFERS | FROM buffer_offset BUFFERS expr
recv_buffer_number : <empty> | INTO buffer_offset THE DEFAULT BUFFERS | INTO buffer_offset BUFFERS expr
message_alignment : <empty> | UNALIGNED | byte_count ALIGNED | data_type ALIGNED
    | data_type MISALIGNED | byte_count MISALIGNED
touching_type : <empty> | WITH DATA TOUCHING | WITHOUT DATA TOUCHING | WITH VERIFICATION
    | WITHOUT VERIFICATION
message_spec : item_count unique item_size message_alignment MESSAGES touching_type tag buffer_number
    | item_count unique message_alignment MESSAGES touching_type tag buffer_number
message_spec_into : item_count unique item_size message_alignment MESSAGES touching_type tag recv_buffer_number
recv_message_spec : opt_async touching_type tag recv_buffer_number
    | opt_async AS opt_an unique message_alignment MESSAGES touching_type tag recv_buffer_number
reduce_message_spec : item_count unique message_alignment data_type touching_type tag buffer_number
    | item_count unique data_type touching_type tag buffer_number
reduce_target_message_spec : touching_type tag recv_buffer_number
    | AS item_count unique message_alignment data_type touching_type tag recv_buffer_number
    | AS item_count unique data_type touching_type tag recv_buffer_number
task_expr : TASKS restricted_ident | TASKS expr | ALL TASKS | ALL TASKS ident | ALL OTHER TASKS
    | TASKS GROUP ident | TASKS range_list
restricted_ident : ident SUCH THAT rel_expr
range_list : range | range comma range_list
range : lbrace expr_list rbrace | lbrace expr_list comma ellipsis comma expr rbrace
    | lbrace expr list_comp_expr rbrace
list_comp_expr : FOR EACH ident IN range_list | FOR EACH ident IN range_list where_expr
    | FOR EACH ident IN range_list list_comp_expr
where_expr : WHERE rel_expr
expr_list : expr | expr_list comma expr
item_count : AN | expr
item_size : expr data_multiplier | data_type SIZED
byte_count : expr data_multiplier
time_unit : MICROSECONDS | MILLISECONDS | SECONDS | MINUTES | HOURS | DAYS
data_multiplier : BITS | BYTES | KILOBYTE | MEGABYTE | GIGABYTE | HALFWORDS | WORDS | INTEGERS
    | DOUBLEWORDS | QUADWORDS | PAGES
data_type : BYTES | HALFWORDS | WORDS | INTEGERS | DOUBLEWORDS | QUADWORDS | PAGES
log_expr_list : log_expr_list_elt | log_expr_list AND log_expr_list_elt
log_expr_list_elt : aggregate_expr AS string_or_log_comment
string_or_log_comment : string | THE VALUE OF string
string_or_expr_list : string_or_log_comment | expr | string_or_log_comment AND string_or_expr_list
    | expr AND string_or_expr_list
let_binding_list : let_binding | let_binding AND let_binding_list
let_binding : ident BE expr | ident BE task_expr | ident BE AN RANDOM TASKS
    | ident BE AN RANDOM TASKS OTHER THAN expr | ident BE AN RANDOM TASKS LESS THAN expr
    | ident BE AN RANDOM TASKS GREATER THAN expr
    | ident BE AN RANDOM TASKS IN lbracket expr comma expr rbracket
    | ident BE AN RANDOM TASKS LESS THAN expr BUT NOT expr
    | ident BE AN RANDOM TASKS GREATER THAN expr BUT NOT expr
    | ident BE AN RANDOM TASKS IN lbracket expr comma expr rbracket BUT NOT expr
stride : <empty> | WITH RANDOM STRIDE | WITH STRIDE expr data_type
touch_repeat_count : <empty> | expr TIMES
"""

_PUNCTUATION = [  # longest first
    ("...", "ellipsis"),
    ("**", "op_power"),
    ("<<", "op_lshift"),
    (">>", "op_rshift"),
    ("<=", "op_leq"),
    (">=", "op_geq"),
    ("<>", "op_neq"),
    ("/\\", "logic_and"),
    ("\\/", "logic_or"),
    (",", "comma"),
    (".", "period"),
    ("{", "lbrace"),
    ("}", "rbrace"),
    ("[", "lbracket"),
    ("]", "rbracket"),
    ("(", "lparen"),
    (")", "rparen"),
    ("&", "op_and"),
    ("/", "op_div"),
    ("=", "op_eq"),
    (">", "op_gt"),
    ("<", "op_lt"),
    ("-", "op_minus"),
    ("*", "op_mult"),
    ("|", "op_or"),
    ("+", "op_plus"),
]
_INTEGER = re.compile(r"\d+([KMGTkmgt]|[Ee]\d+)?([Ss][Tt]|[NnRr][Dd]|[Tt][Hh])?(?![A-Za-z_0-9])")
_WORD = re.compile(r"[A-Za-z]\w*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


@dataclass(frozen=True)
class Token:
    """One token: its grammar symbol (keyword or token class), text and line."""

    kind: str
    text: str
    line: int


def tokenize(source: str) -> list[Token]:
    """Splits coNCePTuaL source into tokens; ConceptualSyntaxError on an unknown character."""
    tokens: list[Token] = []
    i, line, n = 0, 1, len(source)
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "#":
            while i < n and source[i] != "\n":
                i += 1
        elif c == '"':
            m = _STRING.match(source, i)
            if not m:
                raise ConceptualSyntaxError(f"line {line}: unterminated string")
            tokens.append(Token("string", m.group(0), line))
            line += m.group(0).count("\n")
            i = m.end()
        elif c.isdigit():
            m = _INTEGER.match(source, i)
            if not m:
                raise ConceptualSyntaxError(
                    f"line {line}: malformed number near {source[i : i + 12]!r}"
                )
            tokens.append(Token("integer", m.group(0), line))
            i = m.end()
        elif c.isalpha():
            m = _WORD.match(source, i)
            word = m.group(0)
            upper = word.upper()
            kind = _SYNONYMS.get(upper, upper if upper in _KEYWORDS else "ident")
            if (
                kind != "ident"
                and tokens
                and tokens[-1].kind == "op_minus"
                and tokens[-1].line == line
                and source[i - 1] == "-"
            ):
                tokens.pop()  # "a 1-byte message": a hyphen before a keyword is whitespace
            tokens.append(Token(kind, word, line))
            i = m.end()
        else:
            for text, kind in _PUNCTUATION:
                if source.startswith(text, i):
                    if kind in ("comma", "rparen") and tokens and tokens[-1].kind == "op_mult":
                        tokens[-1] = Token("star", "*", tokens[-1].line)
                    tokens.append(Token(kind, text, line))
                    i += len(text)
                    break
            else:
                raise ConceptualSyntaxError(f"line {line}: unexpected character {c!r}")
    return tokens


@dataclass(frozen=True)
class _Grammar:
    rules: tuple[tuple[str, tuple[str, ...]], ...]
    by_lhs: dict
    nullable: frozenset


@lru_cache(maxsize=1)
def _grammar() -> _Grammar:
    rules: list[tuple[str, tuple[str, ...]]] = []
    text = re.sub(r"\n\s+\|", " |", GRAMMAR.strip())
    for line in text.splitlines():
        lhs, rhs = line.split(" : ", 1)
        for alt in rhs.split(" | "):
            symbols = tuple(s for s in alt.split() if s != "<empty>")
            rules.append((lhs.strip(), symbols))
    by_lhs: dict[str, list[int]] = {}
    for k, (lhs, _) in enumerate(rules):
        by_lhs.setdefault(lhs, []).append(k)
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs not in nullable and all(s in nullable for s in rhs):
                nullable.add(lhs)
                changed = True
    return _Grammar(tuple(rules), by_lhs, frozenset(nullable))


def validate(source: str) -> None:
    """Checks ``source`` against the coNCePTuaL grammar.

    Raises
    ------
    ConceptualSyntaxError
        With the line and token where the program stops following the grammar and the tokens
        that could have come there.
    """
    g = _grammar()
    tokens = tokenize(source)
    rules, by_lhs, nullable = g.rules, g.by_lhs, g.nullable
    # Earley recognizer; an item is (rule, dot, origin).
    sets: list[set] = [set() for _ in range(len(tokens) + 1)]
    start = [(k, 0, 0) for k in by_lhs["program"]]
    sets[0].update(start)
    for pos in range(len(tokens) + 1):
        agenda = list(sets[pos])
        current = sets[pos]
        completed_here: dict[str, set] = {}
        while agenda:
            rule, dot, origin = agenda.pop()
            lhs, rhs = rules[rule]
            if dot == len(rhs):  # complete
                completed_here.setdefault(lhs, set()).add(origin)
                for r2, d2, o2 in list(sets[origin]) if origin != pos else list(current):
                    rhs2 = rules[r2][1]
                    if d2 < len(rhs2) and rhs2[d2] == lhs:
                        item = (r2, d2 + 1, o2)
                        if item not in current:
                            current.add(item)
                            agenda.append(item)
                continue
            sym = rhs[dot]
            if sym in by_lhs:  # predict
                for k in by_lhs[sym]:
                    item = (k, 0, pos)
                    if item not in current:
                        current.add(item)
                        agenda.append(item)
                if sym in nullable:
                    item = (rule, dot + 1, origin)
                    if item not in current:
                        current.add(item)
                        agenda.append(item)
                if pos in completed_here.get(sym, ()):
                    item = (rule, dot + 1, origin)
                    if item not in current:
                        current.add(item)
                        agenda.append(item)
            elif pos < len(tokens) and tokens[pos].kind == sym:  # scan
                sets[pos + 1].add((rule, dot + 1, origin))
        if pos < len(tokens) and not sets[pos + 1]:
            expected = sorted(
                {
                    rules[r][1][d]
                    for r, d, _ in current
                    if d < len(rules[r][1]) and rules[r][1][d] not in by_lhs
                }
            )
            tok = tokens[pos]
            raise ConceptualSyntaxError(
                f"line {tok.line}: unexpected {tok.text!r} ({tok.kind}); expected one of: "
                + ", ".join(expected[:25])
            )
    if not any(
        rules[r][0] == "program" and d == len(rules[r][1]) and o == 0 for r, d, o in sets[-1]
    ):
        last = tokens[-1] if tokens else Token("", "", 1)
        raise ConceptualSyntaxError(
            f"line {last.line}: the program ends in the middle of a statement"
        )


def is_valid(source: str) -> bool:
    """True if ``source`` follows the coNCePTuaL grammar."""
    try:
        validate(source)
    except ConceptualSyntaxError:
        return False
    return True
