"""Mining's first pass: disclosures as third-person statements, relative time made absolute
from the turn's own time."""
from __future__ import annotations

import datetime as dt

import pytest

from projections.relative_time import resolve
from workers.mining.chunks import Turn
from workers.mining.statements import is_disclosure, sentences, statements, third_person

MONDAY = dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)   # LoCoMo's first session


@pytest.mark.parametrize(("said", "at", "expected"), [
    ("I went yesterday", MONDAY, "I went on 7 May 2023"),
    ("a group since yesterday", MONDAY, "a group since 7 May 2023"),
    ("last Saturday we hiked", MONDAY, "on 6 May 2023 we hiked"),
    ("next Monday", MONDAY, "on 15 May 2023"),
    ("this Friday", MONDAY, "on 12 May 2023"),
    ("two weeks ago", MONDAY, "around 24 April 2023"),
    ("last weekend", MONDAY, "on the weekend of 6 May 2023"),
    ("last week", MONDAY, "in the week of 1 May 2023"),
    ("next month", MONDAY, "in June 2023"),
    ("last year", MONDAY, "in 2022"),
    ("I start tomorrow", MONDAY, "I start on 9 May 2023"),
    # across the ends of months and years
    ("yesterday", dt.datetime(2024, 3, 1, 9, tzinfo=dt.UTC), "on 29 February 2024"),
    ("tomorrow", dt.datetime(2023, 12, 31, 22, tzinfo=dt.UTC), "on 1 January 2024"),
    ("next month", dt.datetime(2023, 12, 15, tzinfo=dt.UTC), "in January 2024"),
    ("three months ago", dt.datetime(2024, 2, 10, tzinfo=dt.UTC), "in November 2023"),
    ("last weekend", dt.datetime(2023, 5, 7, 20, tzinfo=dt.UTC),  # said on a Sunday
     "on the weekend of 29 April 2023"),
    ("the weekly meeting", MONDAY, "the weekly meeting"),   # nothing relative: unchanged
    # a rough time stays rough, said once ("about in 2018" before)
    ("I started about five years ago", MONDAY, "I started around 2018"),
    ("posted it about 2 weeks ago", MONDAY, "posted it around 24 April 2023"),
    ("since about a month ago", MONDAY, "since around April 2023"),
    # a possessive is the day's, not "on 7 May 2023's game"
    ("yesterday's game", MONDAY, "7 May 2023's game"),
    ("last week's prompt was fun", MONDAY, "the week of 1 May 2023's prompt was fun"),
    ("I loved last month’s issue", MONDAY, "I loved April 2023’s issue"),
    # the expression as a sentence's subject takes no preposition; a capital stays one
    ("Last week was really hectic", MONDAY, "The week of 1 May 2023 was really hectic"),
    ("Yesterday was crazy cool", MONDAY, "7 May 2023 was crazy cool"),
    ("It rained. Yesterday I went", MONDAY, "It rained. On 7 May 2023 I went"),
    ("Her wedding last weekend was lovely", MONDAY,
     "Her wedding on the weekend of 6 May 2023 was lovely"),
    # the word before is read in the text past a code span, not at its offset in the whole
    ("ran `diarist sync` since yesterday", MONDAY, "ran `diarist sync` since 7 May 2023"),
])
def test_relative_time_is_resolved_from_when_it_was_said(said: str, at: dt.datetime,
                                                         expected: str) -> None:
    assert resolve(said, at) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("I live in Berlin now.", "Caroline lives in Berlin now."),
    ("I'm a counselor and I really love my job.", "Caroline is a counselor and Caroline "
                                                  "really loves Caroline's job."),
    ("We adopted a dog.", "Caroline adopted a dog."),
    ("I've been painting, it helps me relax.", "Caroline has been painting, it helps "
                                               "Caroline relax."),
    ("I need a good dance floor for my students.", "Caroline needs a good dance floor for "
                                                   "Caroline's students."),
    ("I sold Curlew and bought Petrel.", "Caroline sold Curlew and bought Petrel."),
    ("I go running and I watch films.", "Caroline goes running and Caroline watches films."),
    ("I don't eat meat.", "Caroline doesn't eat meat."),
    ("Sam and I split up.", "Sam and Caroline split up."),          # a compound subject
    ("My wife and I have moved.", "Caroline's wife and Caroline have moved."),
    ("I mostly write Rust.", "Caroline mostly writes Rust."),         # an adverb in -ly
    ("Since I last saw them I moved.", "Since Caroline last saw them Caroline moved."),
    ("What can I say, I love turtles.", "What can Caroline say, Caroline loves turtles."),
    # a pronoun inside a hyphenated word, and the country, are not the speaker
    ("Taking some me-time helps me.", "Taking some me-time helps Caroline."),
    ("I moved to the US with my US-based team.",
     "Caroline moved to the US with Caroline's US-based team."),
    # nor is a title that a first-person word is part of
    ("I loved The Last of Us.", "Caroline loved The Last of Us."),
    ("We watched Despicable Me with our kids.",
     "Caroline watched Despicable Me with Caroline's kids."),
    ("My favourite band is My Chemical Romance.",
     "Caroline's favourite band is My Chemical Romance."),
    ("I got a bike. My old one broke.", "Caroline got a bike. Caroline's old one broke."),
    ('I love the "How I Built This" podcast.', 'Caroline loves the "How I Built This" podcast.'),
    ("My motto is “I can do it” and I mean it.",
     "Caroline's motto is “I can do it” and Caroline means it."),
    # the spoken forms agree as the words they stand for ("Caroline wannas" before)
    ("I wanna help make a difference.", "Caroline wants to help make a difference."),
    ("I gotta do something.", "Caroline has to do something."),
    # a verb joined to the one that agrees agrees too; a comma ends a compound subject
    ("I practice and train every day.", "Caroline practices and trains every day."),
    ("I use Obsidian for all my notes, and I sync it.",
     "Caroline uses Obsidian for all Caroline's notes, and Caroline syncs it."),
    # … and one joined further on, a verb's base form before its particle, object or "to"
    ("I usually wake up at 7 am and go to bed around 10:30 pm.",
     "Caroline usually wakes up at 7 am and goes to bed around 10:30 pm."),
    ("I usually do my grocery shopping and fill up my gas tank on Sundays.",
     "Caroline usually does Caroline's grocery shopping and fills up Caroline's gas tank on "
     "Sundays."),
    # … not a noun ("rice and chicken"), nor a verb of an infinitive's, of another subject,
    # of a clause within, or after "don't"
    ("I love rice and chicken with vegetables.", "Caroline loves rice and chicken with "
     "vegetables."),
    ("I want to get stronger and improve my endurance.",
     "Caroline wants to get stronger and improve Caroline's endurance."),
    ("I think my sister wanted to come and see the show.",
     "Caroline thinks Caroline's sister wanted to come and see the show."),
    ("I'll make a list of what I believe in and reach out to them.",
     "Caroline will make a list of what Caroline believes in and reach out to them."),
    ("I hope I don't rely on it and forget the basics.",
     "Caroline hopes Caroline doesn't rely on it and forget the basics."),
    # … not one an earlier modal governs
    ("Books can shift how I think and help me learn.",
     "Books can shift how Caroline thinks and help Caroline learn."),
    # a verb whose past is its base form may be past: it stays as said ("quits" read as
    # a job held, and replaced the new one said next)
    ("Big news, I quit the hospital.", "Big news, Caroline quit the hospital."),
    # a verb ending in "-ing" that is no participle agrees too; a participle stays
    ("Sometimes I bring work home.", "Sometimes Caroline brings work home."),
    ("I sing in a choir and I'm singing tonight.",
     "Caroline sings in a choir and Caroline is singing tonight."),
])
def test_third_person_names_who_and_the_verb_agrees(sentence: str, expected: str) -> None:
    assert third_person(sentence, "Caroline") == expected


def test_a_request_to_the_listener_does_not_join_the_statement_before_it() -> None:
    turn = Turn(1, 1, "e", "r", "user", "user", "I'm planning professional development "
                "activities for 2024. For each month of 2024, please list the 2nd Thursday.",
                "2023-03-01T10:00:00Z", True)
    assert [s.text for s in statements(turn)] == [
        "The user is planning professional development activities for 2024."]


def test_a_photo_shown_and_what_goes_on_about_it_state_nothing() -> None:
    """The picture is in the chat, not in the words: "Here's a picture of me …" joins no
    statement, nor does what follows about the picture, nor is that a statement of its
    own ("The crowd was huge." would read "John's crowd was huge.")."""
    turn = Turn(1, 1, "e", "r", "user", "John", "I use my influence to help causes I "
                "believe in. It's about making the world a better place. Here's a picture "
                "of me speaking at a charity event. The crowd was huge. I'm giving another "
                "talk next month.", "2023-05-08T13:56:00Z", True)
    assert [s.text for s in statements(turn, ["John"])] == [
        "John uses John's influence to help causes John believes in. It's about making the "
        "world a better place.", "John is giving another talk in June 2023."]


def test_a_speaker_with_no_name_is_the_user_capitalised_only_where_a_sentence_opens() -> None:
    assert third_person("My partner and I want to make this house our own.", "user") == (
        "The user's partner and the user want to make this house the user's own.")
    assert third_person("As for dates, I'm free in May.", "user") == (
        "As for dates, the user is free in May.")


@pytest.mark.parametrize(("sentence", "kept"), [
    ("I went to a support group yesterday and it was so powerful.", True),
    ("My sister Lena is a nurse.", True),
    ("How have you been?", False),                     # a question
    ("Hey Caroline! Good to see you!", False),         # a greeting, no first person
    ("Thanks so much, I appreciate it.", False),       # a reaction
    ("That sounds lovely, I hope it goes well.", False),
    ("Your painting is amazing.", False),              # about the listener
    ("I am busy, so please list my meetings for May.", False),   # a request to the listener
    ("If I would like to play 2 matches a day, my club opens at 8.", False),  # a condition
    ("I think so.", False),                            # hedged, no content
    ("Oh wow, yeah I moved to Leeds.", True),          # a lead of interjections aside
    ("The sunset was unreal.", False),                 # says nothing about the speaker
    ("Looks like we both need a break.", False),       # the speaker and the listener
    ("We all have our different paths.", False),       # everyone
    ("We should all join forces for the community.", False),   # everyone, after a modal
    ("We've all been so busy.", False),
    ("We have all the ingredients at home.", True),     # "all the …" is no "we all"
    ("We push each other to improve.", False),          # a group, each on the others
    ("We've been supporting one another all season.", False),
    ("I love watching our pets play with one another.", True),   # the speaker's like
    ("Let's keep chasing our dreams.", False),          # a suggestion to the listener
    ("I love to.", False),                              # an answer leaning on a question
    ("And yup, I do- Oscar, my guinea pig.", False),
    ("From a distance I mean, since I'm allergic.", False),  # mends the words before
    ("I have a dog now, Rex I mean.", False),
    ("I have, like, three cats at home.", True),        # a comma is no ellipsis
    # a request or invitation to the listener, the verb first
    ("Check out my painting for the art show.", False),
    ("Let me know if there's anything else I can do.", False),
    ("Give me the steps for my caseload.", False),
    ("Wish me luck.", False),
    # what a person asks an assistant to do (LongMemEval's pasted briefs)
    ("Write me the title tag for the home page of my site.", False),
    ("Love it, now write a similar paragraph about my Paint Protection services.", False),
    ("I write poems for my blog every week.", True),
    ("Got it, I will set my alarm early.", False),       # an acknowledgment
])
def test_only_disclosures_are_candidates(sentence: str, kept: bool) -> None:
    assert is_disclosure(sentence) is kept


def turn(text: str, *, source: bool = True, speaker: str = "Melanie") -> Turn:
    return Turn(1, 7, "e7", "conv:D1:7", "assistant", speaker, text, "2023-05-08T14:00:00Z",
                source)


def test_a_turn_gives_one_statement_a_disclosure_each_citing_that_turn() -> None:
    found = statements(turn("Wow, that's cool! I painted a lake sunrise last year "
                            "[a photo of a painting of a sunset over a lake]. Do you paint?"))
    assert [s.text for s in found] == ["Melanie painted a lake sunrise in 2022."]
    assert found[0].turn.ref == "conv:D1:7"
    assert statements(turn("I painted a lake.", source=False)) == []   # a model's turn
    assert [s.text for s in statements(turn("I moved to Leeds.", speaker="user"))] == [
        "The user moved to Leeds."]


@pytest.mark.parametrize(("said", "stated"), [
    ("Since we last talked, I've started learning German.",
     ["Melanie has started learning German."]),
    ("A lot's happened since our last chat - I just joined a new activist group.",
     ["Melanie just joined a new activist group."]),
    ("Since the last time we talked I adopted a cat.", ["Melanie adopted a cat."]),
    ("Crazy stuff's been happening since we last chatted.", []),   # news to come, none yet
    ("It's been a while since we talked!", []),
    ("I've had a dog since I was a kid.", ["Melanie has had a dog since Melanie was a kid."]),
    ("I haven't run since last time, my knee hurts.",            # not the conversation
     ["Melanie hasn't run since last time, Melanie's knee hurts."]),
])
def test_the_conversation_as_a_statement_s_time_is_left_out(said: str,
                                                             stated: list[str]) -> None:
    assert [s.text for s in statements(turn(said))] == stated


@pytest.mark.parametrize(("said", "stated"), [
    ("I've been into Ticket to Ride, Carcassonne, and Settlers of Catan lately, and I'm "
     "wondering if you have any suggestions that are similar.",
     ["Melanie has been into Ticket to Ride, Carcassonne, and Settlers of Catan lately."]),
    ("I'm always trying out new recipes, so let me know if you want suggestions!",
     ["Melanie is always trying out new recipes."]),
    ("My partner Alex is vegan, so dinners need to work for both of us.",
     ["Melanie's partner Alex is vegan."]),
    ("I'm so proud of you - you should be too!", []),    # what is left says nothing
])
def test_a_disclosure_before_talk_to_the_listener_is_kept_without_it(
        said: str, stated: list[str]) -> None:
    """A sentence whose first clause is a disclosure and whose last is a request or talk
    to the listener (a person's chat with an assistant, mostly) keeps the disclosure."""
    assert [s.text for s in statements(turn(said))] == stated


def test_a_disclosure_said_without_its_i_names_who() -> None:
    """"Lost my job …" is the speaker's, as "I lost my job …" would be; a sentence that
    invites the listener to look is no part of the statement before it."""
    found = statements(turn("Lost my job as a banker yesterday, so I'm gonna start my own "
                            "business. Wish I was braver. Check out my new logo!",
                            speaker="Jon"))
    assert [s.text for s in found] == [
        "Jon lost Jon's job as a banker on 7 May 2023, so Jon is gonna start Jon's own "
        "business.", "Jon wishes Jon was braver."]
    # what a request introduces after its colon may be one
    assert [s.text for s in statements(turn(
        "Let me start with the new additions: my sister-in-law just had a baby, Emma.",
        speaker="user"))] == ["The user's sister-in-law just had a baby, Emma."]
    # a past tense that reads as an imperative too gets no "I"
    assert [s.text for s in statements(turn("Read my new blog post.", speaker="Jon"))] == [
        "Read Jon's new blog post."]


@pytest.mark.parametrize(("said", "stated"), [
    # with no "my" in it either, past an adverb that may open it
    ("Quit the terminal job last month. Started monday doing IT support at a hospital.",
     ["Tomasz started monday doing IT support at a hospital."]),   # "quit" may be an order
    ("Finally switched to neovim this week, vs code is gone.",
     ["Tomasz finally switched to neovim in the week of 8 May 2023, vs code is gone."]),
    # what the unsaid subject did to "me" was no "I"'s; nor does a hyphenated word open
    # one, nor a habit's adverb ("I never saw" would read as a habit)
    ("Really made me think about my health.", ["Really made Tomasz think about Tomasz's "
                                               "health."]),
    ("Much-needed break for my family.", ["Much-needed break for Tomasz's family."]),
    ("Never saw this coming with my job.", ["Never saw this coming with Tomasz's job."]),
])
def test_a_statement_said_without_any_first_person_word_gets_its_i(
        said: str, stated: list[str]) -> None:
    """People chatting drop the "I" ("Started monday doing IT support …"): such a sentence
    is the speaker's disclosure as it would be with it."""
    assert [s.text for s in statements(turn(said, speaker="Tomasz"))] == stated


def test_a_fenced_block_is_no_sentence_of_the_speaker() -> None:
    """Code, a log or a config pasted between fences states nothing about the speaker, and
    the sentence before it ends where the block begins."""
    text = ("Meanwhile my local setup is broken, the app crashes on boot. compose:\n\n```\n"
            "services:\n  pg:\n    image: postgres:16\n```\n\nI moved the volume.")
    assert sentences(text) == ["Meanwhile my local setup is broken, the app crashes on boot.",
                               "compose:", "I moved the volume."]
    assert sentences("I pasted the log: ```\nError: closed by peer") == ["I pasted the log:"]


def test_an_emoji_between_words_ends_a_sentence() -> None:
    """In chat an emoji often stands for the full stop: what follows it is a sentence of its
    own, which would otherwise run on into the statement before it."""
    assert sentences("I'm up early anyway 🙄 the cat has no respect for sleep. So happy 😊.") \
        == ["I'm up early anyway 🙄", "the cat has no respect for sleep.", "So happy 😊."]


def test_a_sentence_about_a_group_acting_on_each_other_joins_no_statement() -> None:
    """"We back each other up" would read "John backs each other up", after the sentence
    before it as much as on its own."""
    found = statements(turn("I faced tough opponents. We back each other up and won't quit."))
    assert [s.text for s in found] == ["Melanie faced tough opponents."]


def test_a_period_inside_a_word_or_number_ends_no_sentence_and_a_line_ends_one() -> None:
    """"Chewy.com" and "3.50" had cut a statement in two ("… from Chewy." / "Com and got
    …"); a line without a full stop had been dropped."""
    found = statements(turn("I ordered from Chewy.com and paid 3.50 dollars.\n"
                            "I live in Oslo\n2. I use Node.js daily."))
    assert [s.text for s in found] == [
        "Melanie ordered from Chewy.com and paid 3.50 dollars.", "Melanie lives in Oslo.",
        "Melanie uses Node.js daily."]


def test_a_sentence_about_the_speakers_thing_is_an_owned_statement() -> None:
    """"The cat has been renamed Mochi." says nothing about the speaker in the first person
    but is about their cat: it is written as theirs and marked, so that mining keeps it only
    if it sets an attribute."""
    found = statements(turn("Ha. The cat has been renamed Mochi, the old name never stuck."))
    assert [(s.text, s.owned) for s in found] == [
        ("Melanie's cat has been renamed Mochi, the old name never stuck.", True)]
    assert [s.owned for s in statements(turn("I adopted a cat."))] == [False]
    assert statements(turn("The sunset was unreal?")) == []


def test_an_opening_address_is_no_subject() -> None:
    """"Joanna, my …" said by Melanie to Joanna is about Melanie: the name it opens with
    would read as the statement's subject ("Joanna, Melanie's family …"); so would a lead
    "So" taken from "So far"."""
    names = {"Melanie", "Joanna"}
    said = "Joanna, my family's been great. Hey Joanna, I adopted a cat. Wow Joanna, I won a cup!"
    assert [s.text for s in statements(turn(said), names)] == [
        "Melanie's family's been great.", "Melanie adopted a cat.", "Melanie won a cup."]
    assert [s.text for s in statements(turn("So far, so good: I sold ten prints."), names)] \
        == ["So far, so good: Melanie sold ten prints."]
    # a name that is no speaker's stays: it may be the subject
    assert [s.text for s in statements(turn("Rex, my dog, is ill."), names)] == [
        "Rex, Melanie's dog, is ill."]


def test_a_past_in_eed_is_said_of_the_speaker() -> None:
    """"I agreed" is "Melanie agreed", not "Melanie agreeds"."""
    assert [s.text for s in statements(turn("I agreed to lead the book club."))] == [
        "Melanie agreed to lead the book club."]


def test_an_interjection_before_a_dash_or_colon_is_no_part_of_the_statement() -> None:
    """"Guess what - I got a puppy" is "Melanie got a puppy"; "Guess what I do now: chess"
    has no separator and stays as said (its "what" is the object)."""
    assert [s.text for s in statements(turn("Guess what - I got a puppy. Oh: I named her Coco!"))
            ] == ["Melanie got a puppy.", "Melanie named her Coco."]
    assert [s.text for s in statements(turn("Guess what I play on weekends now: chess."))] == [
        "Guess what Melanie plays on weekends now: chess."]


@pytest.mark.parametrize(("statement", "event"), [
    ("Melanie celebrated her daughter's birthday with a concert.", True),
    ("The user bought a used car.", True),
    ("The user also loves drinking iced coffee.", False),       # an adjective, no verb
    ("Maya loves the mixed berry tart.", False),
    ("The user has worked as a nurse for years.", False),       # a state: the perfect
    # … unless it says the thing was done just now
    ("The user has recently adopted a puppy.", True),
    ("The user has had a great experience at the charity walk recently.", True),
    ("The user has just seen Dune, and loved it.", True),
    ("The user has been playing a lot of tennis recently.", False),   # it goes on
    ("The user has a cat, and just adopted a dog.", False),    # not in the first clause
    ("The user agreed to lead the book club.", True),           # past, though "-eed"
    ("The user needs a break from work.", False),
    # a long subject: its verb may come past the sixth word
    ("The user's parents and brother unanimously agreed: the user had the Midas touch.",
     True),
    ("The user's older sister and brother finally moved to Leeds.", True),
    ("The user's parents and brother all live in Leeds now.", False),
    ("The user likes the idea of roasted chickpeas.", False),   # "likes" ends the subject
])
def test_an_event_is_told_in_the_past_tense_of_its_first_verb(statement: str,
                                                               event: bool) -> None:
    from workers.mining.statements import is_event

    assert is_event(statement) is event
