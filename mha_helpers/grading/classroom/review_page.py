"""The written-answer review page: one offline HTML file per assignment and question.

``mha-course review`` writes ``DIR/<assignment>/<grade_id>.html``. The page needs no server and
no network (inline CSS and JavaScript, openable from ``file://``). It shows the question, its
model answer and criteria, and every student's answer, escaped here in Python (the page's
script never turns text into HTML). Answers that are the same after normalising white space
and case (:func:`group_key`) form one group, scored once for all its members.

The page cannot write files from ``file://``; the instructor's scores and comments leave it as
a JSON file the browser downloads (or the same JSON copied to the clipboard), the
**decisions file** (:data:`DECISIONS_FORMAT`, read back by :mod:`.review_decisions`):

.. code-block:: json

    {"format": "mha-course-review-decisions", "version": 1, "assignment": "03_...",
     "grade_id": "q03_explain", "max_points": 2, "page": "<sha256 of the answers shown>",
     "saved_at": "2026-12-01T20:00:00Z",
     "decisions": [{"student_id": "1001", "sha256": "<sha256 of the answer text>",
                    "points": 1.5, "comment": "..."}]}

Each decision names the exact answer it was given for (the sha256 of the answer's text):
a student who changes the answer later is pending again. Work in progress is kept in the
browser's local storage, so closing the page loses nothing.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

from .gradebook_db import answer_sha256 as _db_sha256
from .untrusted import clean_text

__all__ = [
    "Answer",
    "Group",
    "answer_sha256",
    "group_key",
    "group_answers",
    "review_page",
    "DECISIONS_FORMAT",
    "MAX_ANSWER_CHARS",
]

DECISIONS_FORMAT = "mha-course-review-decisions"
MAX_ANSWER_CHARS = 20_000  # an answer longer than this is shown cut (the whole text is hashed)


def answer_sha256(text: str) -> str:
    """The key of an answer: the gradebook's sha256 of its text (line endings and the space
    around it ignored, :func:`.gradebook_db.answer_sha256`)."""
    return _db_sha256(text)


def group_key(text: str) -> str:
    """Answers with the same key are the same answer: white space runs made one space, case
    folded.

    >>> group_key("  Concatenation KEEPS\\n heads apart ") == group_key("concatenation keeps heads apart")
    True
    """
    return " ".join(str(text).split()).casefold()


@dataclass
class Answer:
    """One student's written answer to one question (with its decision so far, if any)."""

    student_id: str
    student: str
    text: str
    sha256: str = ""
    points: float | None = None  # a decision already recorded for this very text
    comment: str = ""
    note: str = ""  # e.g. "changed since it was scored (was 1.5)"

    def __post_init__(self):
        self.sha256 = self.sha256 or answer_sha256(self.text)


@dataclass
class Group:
    key: str
    answers: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.answers[0].text


def group_answers(answers: list) -> list[Group]:
    """Identical answers (by :func:`group_key`) together: the largest groups first, then in
    the order of their first student's name."""
    groups: dict = {}
    for a in answers:
        groups.setdefault(group_key(a.text), Group(group_key(a.text))).answers.append(a)
    for g in groups.values():
        g.answers.sort(key=lambda a: (a.student.casefold(), a.student_id))
    return sorted(groups.values(), key=lambda g: (-len(g.answers), g.answers[0].student.casefold()))


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _shown(text: str) -> str:
    return _esc(clean_text(text, max_chars=MAX_ANSWER_CHARS, keep_newlines=True))


def _card(i: int, g: Group, max_points: float) -> str:
    members = [
        {"student_id": clean_text(a.student_id, max_chars=200), "sha256": a.sha256}
        for a in g.answers
    ]
    decided = {a.points for a in g.answers}
    points = next(iter(decided)) if len(decided) == 1 else None
    comments = {a.comment for a in g.answers}
    comment = next(iter(comments)) if len(comments) == 1 else ""
    who = ", ".join(
        f"{clean_text(a.student, max_chars=120)} ({clean_text(a.student_id, max_chars=60)})"
        for a in g.answers
    )
    size = len(g.answers)
    title = f"{size} students gave this answer" if size > 1 else "1 student"
    by_note: dict = {}
    for a in g.answers:
        if a.note:
            by_note.setdefault(a.note, []).append(clean_text(a.student, max_chars=120))
    notes = "".join(
        f"<p class='note'>{_esc('; '.join(names))}: {_esc(note)}</p>"
        for note, names in by_note.items()
    )
    value = "" if points is None else f"{points:g}"
    return (
        f"<section class='card{' group' if size > 1 else ''}' id='c{i}' data-members='"
        f"{_esc(json.dumps(members))}' aria-labelledby='h{i}'>"
        f"<h3 id='h{i}'>Answer {i + 1}: {title}</h3>"
        f"<details{' open' if size <= 3 else ''}><summary>who</summary><p class='who'>{_esc(who)}"
        f"</p></details>{notes}<pre class='answer'>{_shown(g.text)}</pre>"
        f"<div class='inputs'><label>Score (0 to {max_points:g}) <input class='score' "
        f"type='number' inputmode='decimal' min='0' max='{max_points:g}' step='0.5' "
        f"value='{value}' aria-describedby='keys'></label>"
        f"<button type='button' class='full'>full marks</button>"
        f"<button type='button' class='zero'>0</button>"
        f"<label class='c'>Comment for {'these students' if size > 1 else 'the student'} "
        f"<textarea class='comment' rows='2'>{_esc(comment)}</textarea></label></div></section>"
    )


def review_page(
    assignment: str,
    grade_id: str,
    prompt: str,
    max_points: float,
    answers: list,
    model_answer: str = "",
    criteria: tuple = (),
) -> str:
    """The review page's HTML for one question."""
    groups = group_answers(answers)
    page_id = _db_sha256(
        grade_id + "\n" + "\n".join(sorted(f"{a.student_id}:{a.sha256}" for a in answers))
    )
    crit = (
        "<ul>"
        + "".join(f"<li>{_esc(clean_text(c, max_chars=2000))}</li>" for c in criteria)
        + "</ul>"
        if criteria
        else "<p class='note'>The bank gives no criteria for this question (a question's "
        "<code>extra={'criteria': [...]}</code> in <code>solutions/banks/</code>).</p>"
    )
    model = (
        f"<pre class='model'>{_shown(model_answer)}</pre>"
        if model_answer
        else "<p class='note'>No model answer found in the solution notebook.</p>"
    )
    meta = {
        "format": DECISIONS_FORMAT,
        "version": 1,
        "assignment": assignment,
        "grade_id": grade_id,
        "max_points": max_points,
        "page": page_id,
    }
    title = f"Written answers: {assignment}, {grade_id}"
    cards = "\n".join(_card(i, g, max_points) for i, g in enumerate(groups))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_esc(title)}</h1><p class='progress' role='status' aria-live='polite'>"
        f"<span id='done'>0</span> of {len(answers)} answers scored ({len(groups)} distinct)"
        "</p><div class='save'><button type='button' id='download'>Download decisions (JSON)"
        "</button> <button type='button' id='copy'>Copy decisions to the clipboard</button> "
        "<button type='button' id='next'>Next unscored (n)</button> <span id='saved' "
        "role='status'></span></div></header><main>"
        f"<section class='question'><h2>Question ({max_points:g} points)</h2>"
        f"<p>{_esc(clean_text(prompt, max_chars=4000))}</p>"
        f"<details open><summary>Model answer</summary>{model}</details>"
        f"<details open><summary>Criteria</summary>{crit}</details>"
        "<p id='keys' class='keys'>Keys: in a score box, Enter goes to the next answer and "
        "Shift+Enter to the previous one; f gives full marks, 0 gives zero; Alt+Down and "
        "Alt+Up move between answers from anywhere; n jumps to the next unscored answer. "
        "Your work is kept in this browser until you download it.</p></section>"
        f"{cards}<section class='out'><h2>Decisions</h2><p>Then record them: <code>"
        "mha-course review --record FILE.json --gradebook GRADEBOOK.csv --feedback DIR</code>"
        "</p><label>The decisions as JSON<textarea id='json' rows='6' readonly></textarea>"
        "</label></section></main>"
        f"<script type='application/json' id='meta'>{_json_for_script(meta)}</script>"
        f"<script>{_JS}</script></body></html>\n"
    )


def _json_for_script(obj) -> str:
    """JSON that cannot end the script element it sits in."""
    return (
        json.dumps(obj, ensure_ascii=True)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--muted:#555;--card:#f6f6f6;
--line:#c8c8c8;--accent:#0b5cad;--done:#1d7a36}
@media (prefers-color-scheme:dark){:root{--bg:#16181c;--fg:#e8e8e8;--muted:#b0b0b0;
--card:#23262b;--line:#454a52;--accent:#7ab8ff;--done:#6fd08c}}
body{background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,sans-serif;margin:0}
header{position:sticky;top:0;background:var(--bg);border-bottom:1px solid var(--line);
padding:.5em 1em;z-index:1}h1{font-size:1.2em;margin:.2em 0}main{max-width:60em;margin:auto;
padding:0 1em 4em}.card,.question,.out{background:var(--card);border:1px solid var(--line);
border-radius:6px;padding:.6em 1em;margin:1em 0}.card.scored{border-left:6px solid var(--done)}
.card:focus-within{outline:3px solid var(--accent)}.group h3::after{content:" (scored once for all)";font-weight:normal;
color:var(--muted)}
pre{white-space:pre-wrap;word-wrap:break-word;font:15px/1.45 ui-monospace,monospace;
background:var(--bg);border:1px solid var(--line);padding:.5em;border-radius:4px}
.inputs{display:flex;flex-wrap:wrap;gap:.6em;align-items:end}.c{flex:1 1 20em}
textarea{width:100%;box-sizing:border-box}input.score{width:5em;font-size:1.1em}
input,textarea,button{background:var(--bg);color:var(--fg);border:1px solid var(--line);
border-radius:4px;padding:.3em}button{cursor:pointer}button:focus,input:focus,textarea:focus{
outline:2px solid var(--accent)}.note,.keys,.who{color:var(--muted)}.invalid{
outline:3px solid #c0392b}
"""

# The page's script: reads the cards the server wrote, keeps the work in localStorage, and
# writes the decisions file. It only ever sets text (value, textContent), never HTML.
_JS = r"""
(function(){
'use strict';
var meta=JSON.parse(document.getElementById('meta').textContent);
var key='mha-review:'+meta.page;
var cards=Array.prototype.slice.call(document.querySelectorAll('section.card'));
var max=meta.max_points;
function members(c){return JSON.parse(c.getAttribute('data-members'));}
function score(c){return c.querySelector('input.score');}
function comment(c){return c.querySelector('textarea.comment');}
function valid(v){if(v===''){return true;}var x=Number(v);return isFinite(x)&&x>=0&&x<=max;}
function state(){
  var out={};
  cards.forEach(function(c){out[c.id]={p:score(c).value,c:comment(c).value};});
  return out;
}
function decisions(){
  var list=[];
  cards.forEach(function(c){
    var v=score(c).value.trim();
    if(v===''||!valid(v)){return;}
    members(c).forEach(function(m){
      list.push({student_id:m.student_id,sha256:m.sha256,points:Number(v),
                 comment:comment(c).value.trim()});
    });
  });
  return list;
}
function file(){
  var f={};Object.keys(meta).forEach(function(k){f[k]=meta[k];});
  f.saved_at=new Date().toISOString().replace(/\.\d+Z$/,'Z');
  f.decisions=decisions();
  return JSON.stringify(f,null,1);
}
function refresh(){
  var done=0;
  cards.forEach(function(c){
    var v=score(c).value.trim(), ok=valid(v);
    score(c).classList.toggle('invalid',!ok);
    score(c).setAttribute('aria-invalid',ok?'false':'true');
    var s=v!==''&&ok;
    c.classList.toggle('scored',s);
    if(s){done+=members(c).length;}
  });
  document.getElementById('done').textContent=String(done);
  document.getElementById('json').value=file();
  try{localStorage.setItem(key,JSON.stringify(state()));}catch(e){}
}
function restore(){
  var saved=null;
  try{saved=JSON.parse(localStorage.getItem(key)||'null');}catch(e){}
  if(!saved){return;}
  cards.forEach(function(c){
    var s=saved[c.id];
    if(s&&s.p!==''){score(c).value=s.p;}  // never blank what the gradebook already holds
    if(s&&s.c!==''){comment(c).value=s.c;}
  });
}
function go(i){
  if(i<0||i>=cards.length){return;}
  var el=score(cards[i]);el.focus();el.select&&el.select();
  cards[i].scrollIntoView({block:'center'});
}
function at(el){for(var i=0;i<cards.length;i++){if(cards[i].contains(el)){return i;}}return -1;}
function nextUnscored(){
  var start=at(document.activeElement);
  for(var k=1;k<=cards.length;k++){
    var i=(start+k+cards.length)%cards.length;
    if(score(cards[i]).value.trim()===''){go(i);return;}
  }
}
cards.forEach(function(c,i){
  score(c).addEventListener('input',refresh);
  comment(c).addEventListener('input',refresh);
  c.querySelector('button.full').addEventListener('click',function(){
    score(c).value=String(max);refresh();go(i+1);});
  c.querySelector('button.zero').addEventListener('click',function(){
    score(c).value='0';refresh();go(i+1);});
  score(c).addEventListener('keydown',function(e){
    if(e.key==='Enter'){e.preventDefault();go(e.shiftKey?i-1:i+1);}
    else if(e.key==='f'){e.preventDefault();score(c).value=String(max);refresh();}
  });
});
document.addEventListener('keydown',function(e){
  var t=e.target.tagName;
  if(e.altKey&&(e.key==='ArrowDown'||e.key==='ArrowUp')){
    e.preventDefault();var i=at(document.activeElement);
    go(e.key==='ArrowDown'?i+1:Math.max(0,i-1));return;
  }
  if(t==='INPUT'||t==='TEXTAREA'){return;}
  if(e.key==='n'){e.preventDefault();nextUnscored();}
});
document.getElementById('next').addEventListener('click',nextUnscored);
document.getElementById('download').addEventListener('click',function(){
  var blob=new Blob([file()],{type:'application/json'});
  var a=document.createElement('a');
  a.href=URL.createObjectURL(blob);
  a.download='decisions_'+meta.assignment+'_'+meta.grade_id+'.json';
  document.body.appendChild(a);a.click();a.remove();
  document.getElementById('saved').textContent='downloaded '+a.download;
});
document.getElementById('copy').addEventListener('click',function(){
  var text=file(), say=document.getElementById('saved');
  function fallback(){
    var box=document.getElementById('json');box.value=text;box.focus();box.select();
    var ok=false;try{ok=document.execCommand('copy');}catch(e){}
    say.textContent=ok?'copied':'select the text below and copy it (Ctrl+C)';
  }
  if(navigator.clipboard&&navigator.clipboard.writeText){
    navigator.clipboard.writeText(text).then(function(){say.textContent='copied';},fallback);
  }else{fallback();}
});
restore();refresh();
})();
"""
