// The banner shown while the console browses as one of the app's users
// (a user token minted on the Roles screen, held in memory only).
import { fmtTime } from './ui.jsx';

export function ViewAsBanner({ viewAs, onLeave }) {
  return (
    <div className="view-as" role="status" aria-label="Viewing as">
      <span>
        Viewing as <strong>{viewAs.userId}</strong> ({(viewAs.roles || []).join(', ')})
      </span>
      <small>token until {fmtTime(viewAs.expiresAt)}; every call goes with it</small>
      <button type="button" onClick={onLeave}>
        Leave view
      </button>
    </div>
  );
}

// The notice shown when a view as user ended by itself (its token expired
// or was refused): the console is back in its own view.
export function ViewEndedNotice({ message, onDismiss }) {
  return (
    <div className="view-as ended" role="status" aria-label="View ended">
      <span>{message}</span>
      <button type="button" onClick={onDismiss}>
        Dismiss
      </button>
    </div>
  );
}
