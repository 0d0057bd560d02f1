"""Modal dialogs: create a room, challenge a player, answer a challenge, join by invite,
and the help screen. Each returns a wire message (or None when cancelled); the
app sends it. Form checks happen here so a bad value never reaches the server."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from client_tui.text import plain, printable
from protocol import messages as m
from protocol.errors import ArenaError
from protocol.rules import FEATURED, find_variant

CLOCKS = [("no clock", "none"), ("seconds per move", "per_move"), ("minutes + increment", "increment")]


def time_control(kind: str, first: str, second: str) -> m.NoClock | m.PerMove | m.Increment:
    """The time control from the form's fields: seconds per move, or minutes and seconds.

    Raises:
        ValueError: a field is not a positive number.
    """
    if kind == "none":
        return m.NoClock()
    a = float(first)
    if kind == "per_move":
        if not 0.1 <= a <= 86_400:
            raise ValueError("seconds per move must be between 0.1 and 86400")
        return m.PerMove(move_ms=int(a * 1000))
    b = float(second or 0)
    if not 0 < a <= 1440 or not 0 <= b <= 3600:
        raise ValueError("base minutes must be 0 to 1440, increment 0 to 3600 seconds")
    return m.Increment(base_ms=int(a * 60_000), increment_ms=int(b * 1000))


class _Form(ModalScreen[m.ClientMessage | None]):
    """Shared frame: a title, the fields, an error line, OK and Cancel."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    _Form { align: center middle; }
    _Form > Vertical { width: 64; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    _Form Grid { grid-size: 2; grid-columns: 22 1fr; height: auto; grid-gutter: 0 1; }
    _Form Grid > Label { padding: 1 0 0 0; }
    _Form #error { color: $error; height: auto; }
    _Form Horizontal { height: auto; align-horizontal: right; }
    """
    TITLE_TEXT = ""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.TITLE_TEXT, classes="title")
            with Grid():
                yield from self.fields()
            yield Static("", id="error")
            with Horizontal():
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def fields(self) -> ComposeResult:
        raise NotImplementedError

    def build(self) -> m.ClientMessage:
        raise NotImplementedError

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self.action_ok()
        else:
            self.action_cancel()

    def on_input_submitted(self) -> None:
        self.action_ok()

    def action_ok(self) -> None:
        try:
            message = self.build()
        except (ValueError, ArenaError) as exc:
            self.query_one("#error", Static).update(plain(getattr(exc, "message", None) or exc))
            return
        self.dismiss(message)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    def chosen(self, widget_id: str) -> str:
        value = self.query_one(f"#{widget_id}", Select).value
        return "" if value is Select.NULL else str(value)

    def game_fields(self) -> ComposeResult:
        yield Label("variant")
        yield Input("classic", id="variant", placeholder="classic, tactic-toe, 15x15k5 ...")
        yield Label("clock")
        yield Select(CLOCKS, value="none", allow_blank=False, id="clock")
        yield Label("seconds / minutes")
        yield Input("", id="first", placeholder="per move: seconds; or base minutes")
        yield Label("increment (s)")
        yield Input("", id="second", placeholder="increment seconds")
        yield Label("ply cap (tactic-toe)")
        yield Input("", id="ply_cap", placeholder="default 200")
        yield Label("rated")
        yield Checkbox("rated game", True, id="rated")

    def game_options(self) -> dict[str, object]:
        variant = find_variant(self.value("variant"))  # raises UnknownVariant with the valid forms
        cap_text = self.value("ply_cap")
        ply_cap = None
        if cap_text:
            if variant.max_marks is None:
                raise ValueError("a ply cap only applies where marks vanish (tactic-toe)")
            ply_cap = int(cap_text)
            if not 1 <= ply_cap <= 10_000:
                raise ValueError("the ply cap must be 1 to 10000")
        return {
            "variant": variant.name,
            "time_control": time_control(self.chosen("clock"), self.value("first"), self.value("second")),
            "ply_cap": ply_cap,
            "rated": self.query_one("#rated", Checkbox).value,
        }


class CreateRoom(_Form):
    """A new room: variant (any m,n,k size), clock, private with invite, rated, seat."""

    TITLE_TEXT = "Create a room"

    def fields(self) -> ComposeResult:
        yield from self.game_fields()
        yield Label("private")
        yield Checkbox("private (invite code)", False, id="private")
        yield Label("seat")
        yield Select(
            [("random", "random"), ("X", "x"), ("O", "o")], value="random", allow_blank=False, id="seat"
        )

    def build(self) -> m.ClientMessage:
        return m.CreateRoom(
            private=self.query_one("#private", Checkbox).value,
            seat=self.chosen("seat"),  # type: ignore[arg-type]
            **self.game_options(),  # type: ignore[arg-type]
        )


class ChallengePlayer(_Form):
    """Challenge a player or bot by name: variant, colour, clock, rated, and the bot's
    level of play where it offers levels (``levels_of`` says which, by name)."""

    TITLE_TEXT = "Challenge"

    def __init__(self, opponent: str = "", levels_of: Callable[[str], list[str]] = lambda name: []) -> None:
        super().__init__()
        self.opponent = opponent
        self.levels_of = levels_of

    def fields(self) -> ComposeResult:
        yield Label("opponent")
        yield Input(self.opponent, id="opponent", placeholder="a player or bot name")
        yield from self.game_fields()
        yield Label("your colour")
        yield Select(
            [("random", "random"), ("X (first)", "x"), ("O", "o")],
            value="random",
            allow_blank=False,
            id="colour",
        )
        yield Label("level (bots)")
        yield Select([], prompt="its default", id="level")

    def on_mount(self) -> None:
        self._offer_levels(self.opponent)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "opponent":
            self._offer_levels(event.value)

    def _offer_levels(self, name: str) -> None:
        select = self.query_one("#level", Select)
        levels = self.levels_of(name.strip())
        select.set_options([(printable(level), level) for level in levels])
        select.disabled = not levels

    def build(self) -> m.ClientMessage:
        opponent = self.query_one("#opponent", Input).value
        if not opponent.strip():
            raise ValueError("name the player or bot to challenge")
        level = self.chosen("level") or None
        return m.Challenge(
            opponent=opponent,
            level=level,
            colour=self.chosen("colour"),  # type: ignore[arg-type]
            **self.game_options(),  # type: ignore[arg-type]
        )


class JoinPrivate(_Form):
    """Take a seat (or watch) in a room by id, with its invite code if private."""

    TITLE_TEXT = "Join a room by id"

    def fields(self) -> ComposeResult:
        yield Label("room id")
        yield Input("", id="room")
        yield Label("invite code")
        yield Input("", id="invite", placeholder="for a private room")
        yield Label("watch only")
        yield Checkbox("spectate", False, id="watch")

    def build(self) -> m.ClientMessage:
        room = self.value("room")
        if not room:
            raise ValueError("enter the room id")
        invite = self.value("invite") or None
        if self.query_one("#watch", Checkbox).value:
            return m.Spectate(room=room, invite=invite)
        return m.Join(room=room, invite=invite)


class ChallengeOffer(ModalScreen[bool]):
    """An incoming challenge: accept (True) or decline (False)."""

    BINDINGS = [Binding("a", "answer(True)", "accept"), Binding("d,escape", "answer(False)", "decline")]
    DEFAULT_CSS = """
    ChallengeOffer { align: center middle; }
    ChallengeOffer > Vertical {
        width: 60; height: auto; border: thick $warning; background: $surface; padding: 1 2;
    }
    ChallengeOffer Horizontal { height: auto; align-horizontal: right; }
    """

    def __init__(self, offer: m.ChallengeReceived) -> None:
        super().__init__()
        self.offer = offer

    def compose(self) -> ComposeResult:
        o = self.offer
        colour = {"x": "they play X", "o": "they play O", "random": "colours drawn at random"}[o.colour]
        clock = describe_clock(o.time_control)
        headline = f"{o.challenger.name} ({o.challenger.kind}) challenges you"
        if o.opponent is not None and o.seat is not None:  # a game a director arranged
            headline = f"{o.challenger.name} arranges a game: you against {o.opponent}"
            colour = f"you play {o.seat.upper()}"
        with Vertical():
            yield Static(plain(headline, "bold"))
            yield Static(plain(f"{o.variant}, {colour}, {clock}, {'rated' if o.rated else 'casual'}"))
            with Horizontal():
                yield Button("Accept (a)", variant="success", id="accept")
                yield Button("Decline (d)", variant="error", id="decline")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "accept")

    def action_answer(self, accept: bool) -> None:
        self.dismiss(accept)


def describe_clock(tc: m.NoClock | m.PerMove | m.Increment) -> str:
    if isinstance(tc, m.PerMove):
        return f"{tc.move_ms / 1000:g} s per move"
    if isinstance(tc, m.Increment):
        return f"{tc.base_ms / 60_000:g} min + {tc.increment_ms / 1000:g} s"
    return "no clock"


HELP = f"""\
ttt play: keys

Lobby
  enter      take a seat in the selected room (or challenge the selected player)
  w          watch the selected room
  c          create a room        b   challenge the selected player or bot
  j          join a room by id and invite code
  v          next variant on the leaderboard     t   a tournament's standings
  q          quit

Game
  arrows     move the cursor      enter   place a mark there
  1-9        on 3x3 boards, like a numeric keypad: 7 8 9 is the top row
  mouse      click a cell
  r          rematch (colours swap)    g   resign (give up)
  escape     back to the lobby (leaving a game in progress resigns it)

Tactic-toe: each player keeps at most 3 marks. The mark drawn in small,
dim italics is the one that leaves when its owner next moves; you may not
place on your own leaving mark. Featured variants: {", ".join(FEATURED)}.
"""


class Help(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss_help", "close")]
    DEFAULT_CSS = """
    Help { align: center middle; }
    Help > Static { width: 84; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    """

    def compose(self) -> ComposeResult:
        yield Static(HELP, markup=False)

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
